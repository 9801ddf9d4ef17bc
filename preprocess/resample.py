"""The fast CPU resize + crop of decoded pixels: OpenCV, within a stated tolerance of Pillow's (the default path).

Use ``resize_center_crop_pixels`` on a (H, W, 3) uint8 array; ``preprocess.batch`` does, for every recipe, unless
the job asks for the exact Pillow path (``--cpu-resize exact``). Two OpenCV calls on the kept rectangle:
a separable prefilter (``preprocess.taps``: least-squares taps that make the interpolation after it weigh the
source as Pillow's antialiased kernel does), then ``cv2.resize`` at the recipe's exact scale per axis, whose
output is cropped. Its interpolation is linear where taps fit Pillow's kernel well enough for it (``LINEAR_FITS``:
the ResNet50 recipe on 500x375 photos), else cubic, whatever the recipe's kernel.

``cv2.resize`` puts output pixel i at source ``x0 + (i + 0.5) s - 0.5`` of the rectangle it is given; the
reference's crop starts at a fraction of a pixel. The rectangle starts at a whole pixel a few output pixels
before the crop, chosen among the next ``MAX_EXTRA_SKIP`` so that the fraction left is small, and the taps shift
the image by it; the crop is cut from cv2.resize's output. So only the crop and a margin are filtered and resized,
whatever the image's shape (a 4000x30 strip's 224 crop reads 40 of its 4000 columns).

Measured on one core (BENCHMARKS.md): about 0.3-0.4 ms for a 500x375 photo to a 224 crop, against 1.0-1.4 ms
for Pillow's resample. Pixels: docs/model.md gives the difference from each model's own transform, per recipe.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

from preprocess.recipe import Recipe
from preprocess.taps import SUPPORT, Fit, prefilter_taps
from preprocess.transform import crop_offsets, resized_size

# How far the fast path may be from the exact path's pixels (Pillow's, which are torchvision's, timm's and Hugging Face
# PIL processors' own), for every recipe and scale, in levels: the mean and the 99th percentile of the absolute
# difference. Measured on textured photo-like JPEGs (job.sample.synthetic.textured_image) over scales 0.6-3.8, both
# kernels, centre and squash: mean 0.24-0.91, p99 1-4; on real photos' crops p99 up to 5 (docs/model.md). The tests
# hold it (tests/unit/test_resample.py).
PIXEL_TOLERANCE = {"mean": 1.0, "p99": 6}
# OpenCV's linear interpolation is cheaper than its cubic (about 0.15 ms of 0.3 on a 224 crop, one core): the plan
# takes it when its taps fit Pillow's kernel this well (rms weight misfit; 0.018 at the ResNet50 recipe's scale of
# 1.62 measured 0.83 levels mean on textured photos, 0.65 on real ones) and at most LINEAR_SLACK times as badly as
# cubic's taps (bicubic at 1.62: linear 0.019, 0.96 levels; cubic 0.009, 0.53 levels), else cubic.
LINEAR_FITS = 0.020
LINEAR_SLACK = 1.5
# The rectangle may start up to this many resized pixels before the crop, to find a start whose fraction of a pixel
# is small: the taps' shift is then nearly nothing (a shift of 0.5 cost up to 2 levels mean at scales near 1).
MAX_EXTRA_SKIP = 32
_FLAGS = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}


def resize_center_crop_pixels(pixels: np.ndarray, recipe: Recipe) -> np.ndarray:
    """The (crop, crop, 3) uint8 centre crop of (H, W, 3) uint8 ``pixels`` resized as ``recipe`` says."""
    cv2.setNumThreads(1)  # one image per call: OpenCV's thread pool would only add hand-offs to each worker
    height, width = pixels.shape[:2]
    plan = _plan(width, height, recipe)
    region = pixels[plan.rows[0]:plan.rows[1], plan.columns[0]:plan.columns[1]]
    if len(plan.taps_x) > 1 or len(plan.taps_y) > 1:
        region = cv2.sepFilter2D(region, -1, plan.taps_x, plan.taps_y, borderType=cv2.BORDER_REPLICATE)
    resized = cv2.resize(region, None, fx=plan.zoom[0], fy=plan.zoom[1], interpolation=plan.flag)
    top, left = plan.skip
    return resized[top:top + recipe.crop, left:left + recipe.crop]


@dataclass(frozen=True)
class _Plan:
    """How one source size is resampled: the same for every image of that size."""

    rows: tuple[int, int]
    columns: tuple[int, int]
    taps_x: np.ndarray
    taps_y: np.ndarray
    flag: int  # cv2's interpolation
    zoom: tuple[float, float]  # cv2.resize's fx, fy
    skip: tuple[int, int]  # (top, left) of the crop in cv2.resize's output


@functools.lru_cache(maxsize=1024)  # a plan holds a few hundred bytes; a new size costs 1-3 ms (its fits: _taps)
def _plan(width: int, height: int, recipe: Recipe) -> _Plan:
    resized_w, resized_h = resized_size(width, height, recipe)
    left, top = crop_offsets(resized_w, resized_h, recipe)
    spans = (_span(width, resized_w, left, recipe), _span(height, resized_h, top, recipe))
    (x0, x1, skip_x, shift_x), (y0, y1, skip_y, shift_y) = spans
    scale_x, scale_y = width / resized_w, height / resized_h
    interpolation, (fit_x, fit_y) = _chosen(recipe, ((scale_x, shift_x), (scale_y, shift_y)))
    return _Plan((y0, y1), (x0, x1), fit_x.taps, fit_y.taps, _FLAGS[interpolation], (1 / scale_x, 1 / scale_y),
                 (skip_y, skip_x))


def _chosen(recipe: Recipe, axes: tuple[tuple[float, float], ...]) -> tuple[str, list[Fit]]:
    """Linear interpolation when its taps fit well enough on every axis and not much worse than cubic's, else cubic."""
    fits = {name: [_taps(recipe.interpolation, round(scale, 4), name, round(shift, 3)) for scale, shift in axes]
            for name in _FLAGS}
    worst = {name: max(fit.residual for fit in axis_fits) for name, axis_fits in fits.items()}
    linear = worst["linear"] <= min(LINEAR_FITS, LINEAR_SLACK * worst["cubic"])
    return ("linear", fits["linear"]) if linear else ("cubic", fits["cubic"])


# Photos of many sizes share scales (a short side of 375 at every width) and shifts: a fit rounded to 1e-4 of the
# scale and 1e-3 pixel of the shift (moving no sample by 1/1000 pixel) is made once, about 0.5-1 ms.
_taps = functools.lru_cache(maxsize=4096)(prefilter_taps)


def _span(size: int, resized: int, offset: int, recipe: Recipe) -> tuple[int, int, int, float]:
    """(start, stop, skip, shift) of one axis: the source span read, the resized pixels before the crop in what
    cv2.resize makes of it, and the fraction of a pixel the taps shift the image by."""
    scale = size / resized
    reach = math.ceil(SUPPORT[recipe.interpolation] * max(scale, 1.0)) + 3  # the taps' and the interpolation's pixels
    least = min(offset, math.ceil(reach / scale))
    skips = range(least, min(offset, least + MAX_EXTRA_SKIP) + 1)
    skip = min(skips, key=lambda k: (abs((offset - k) * scale - round((offset - k) * scale)), k))
    start = round((offset - skip) * scale)
    stop = min(size, math.ceil((offset + recipe.crop) * scale) + reach)
    if round((stop - start) / scale) < skip + recipe.crop:  # the image's end, a pixel short by rounding: the whole axis
        return 0, size, offset, 0.0
    return start, stop, skip, (offset - skip) * scale - start
