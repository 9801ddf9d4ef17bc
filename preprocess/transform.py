"""Resize (the short side, or both sides for a squash) and center-crop, in one resampling pass.

Matches the recipe's eval transform (``Resize(resize, interpolation, antialias) + CenterCrop(crop)``,
as ``ResNet50_Weights.*.transforms()`` or timm's eval transform builds it) but resamples only the
source rectangle that survives the crop: the same pixels, without materialising a full
resized image (which for a 12 MP photo or a 20000x10 strip is most of the work).

Two resamplers of that one rectangle:
- ``resize_center_crop`` (a Pillow image): Pillow's antialiased bilinear, torchvision's own pixels.
- ``resize_center_crop_pixels`` (a uint8 HWC array, the JPEG fast path's output): OpenCV, about 4x
  faster than Pillow on one core, within ``PIXEL_TOLERANCE`` of torchvision's pixels.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from preprocess.recipe import Recipe

# How close resize_center_crop_pixels stays to torchvision's eval transform on photo-like images, in
# uint8 levels: mean and 99th percentile of the absolute difference (tests/unit/test_transform.py
# holds it for every shape it tries; the worst are downscales by 1.1-1.3, where a few-tap prefilter is coarse).
PIXEL_TOLERANCE = {"mean": 1.0, "p99": 4}
# OpenCV's bilinear sampling is not antialiased: a triangle prefilter stands in for the antialias.
# Prefilter then interpolate blurs a little more than torchvision's one kernel; a triangle 0.9 of the
# scale wide came out closest to it over downscales from 1.03 to 3.2.
_PREFILTER_WIDTH = 0.9
PIL_KERNELS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}  # by Recipe.interpolation


def resize_center_crop(image: Image.Image, recipe: Recipe) -> np.ndarray:
    """Return the (crop, crop, 3) uint8 center crop of ``image`` resized as the recipe says."""
    box = source_box(image.size, recipe)
    out = image.resize((recipe.crop, recipe.crop), PIL_KERNELS[recipe.interpolation], box=box)
    return np.asarray(out, dtype=np.uint8)


def resize_center_crop_pixels(pixels: np.ndarray, recipe: Recipe) -> np.ndarray:
    """``resize_center_crop`` of (H, W, 3) uint8 pixels, by OpenCV: within ``PIXEL_TOLERANCE`` of torchvision.

    Needs the ``fastjpeg`` extra (opencv-python-headless), imported here: the default path never loads it.
    """
    import cv2

    cv2.setNumThreads(1)  # one image per call: OpenCV's thread pool would only add hand-offs to each worker
    height, width = pixels.shape[:2]
    plan = _resampling(width, height, recipe)
    top, bottom, left, right = plan.region
    region = pixels[top:bottom, left:right]
    if len(plan.taps_x) > 1 or len(plan.taps_y) > 1:
        region = cv2.sepFilter2D(region, -1, plan.taps_x, plan.taps_y, borderType=cv2.BORDER_REPLICATE)
    return cv2.remap(region, plan.map_xy, plan.map_fraction, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


@dataclass(frozen=True)
class _Resampling:
    """How ``resize_center_crop_pixels`` resamples one source size: the same for every image of that size."""

    region: tuple[int, int, int, int]  # (top, bottom, left, right): the kept rectangle, its taps and neighbours
    taps_x: np.ndarray  # the triangle prefilter along x, and along y
    taps_y: np.ndarray
    map_xy: np.ndarray  # where each output pixel samples the region, as cv2.convertMaps' fixed-point pair
    map_fraction: np.ndarray


@functools.lru_cache(maxsize=64)  # a night's photos come in a few sizes; each plan holds about 300 KB
def _resampling(width: int, height: int, recipe: Recipe) -> _Resampling:
    import cv2

    left, top, right, bottom = source_box((width, height), recipe)
    scale_x, scale_y = (right - left) / recipe.crop, (bottom - top) / recipe.crop  # source pixels per output pixel
    taps_x, taps_y = _triangle(scale_x), _triangle(scale_y)
    margin = max(len(taps_x), len(taps_y)) // 2 + 2  # the taps plus the bilinear neighbours
    x0, y0 = max(0, int(left) - margin), max(0, int(top) - margin)
    region = (y0, min(height, math.ceil(bottom) + margin), x0, min(width, math.ceil(right) + margin))
    # Output pixel (i, j) samples the source at its centre: x = left + (j + 0.5) * scale_x, less 0.5 (pixel centres).
    centres = np.arange(recipe.crop) + 0.5
    xs = (left - x0 + centres * scale_x - 0.5).astype(np.float32)
    ys = (top - y0 + centres * scale_y - 0.5).astype(np.float32)
    # Fixed point (1/32 pixel, as warpAffine samples): remap's fast path, the maps computed once per size.
    map_xy, map_fraction = cv2.convertMaps(*np.meshgrid(xs, ys), cv2.CV_16SC2)
    return _Resampling(region, taps_x, taps_y, map_xy, map_fraction)


def source_box(source: tuple[int, int], recipe: Recipe) -> tuple[float, float, float, float]:
    """The rectangle (left, top, right, bottom) of a (width, height) source that Resize + CenterCrop keeps.

    In pixel-edge coordinates (pixel i spans [i, i+1]), as Pillow's ``resize(box=...)`` and
    ``roi_align(aligned=True)`` both take it; the device path crops with the same boxes.
    """
    width, height = source
    if recipe.crop_mode == "squash":
        resized_w = resized_h = recipe.resize
    else:
        resized_w, resized_h = _resized_size(width, height, recipe.resize)
    # torchvision's center_crop: top = int(round((h - crop) / 2)).
    top = int(round((resized_h - recipe.crop) / 2.0))
    left = int(round((resized_w - recipe.crop) / 2.0))
    scale_x, scale_y = width / resized_w, height / resized_h
    return (left * scale_x, top * scale_y, (left + recipe.crop) * scale_x, (top + recipe.crop) * scale_y)


def _resized_size(width: int, height: int, short: int) -> tuple[int, int]:
    """torchvision's F.resize size rule for an int size: short side = ``short``, long side truncated."""
    if width <= height:
        return short, int(short * height / width)
    return int(short * width / height), short


def _triangle(scale: float) -> np.ndarray:
    """Normalised triangle taps for a downscale by ``scale`` (one tap, no filter, when enlarging)."""
    width = _PREFILTER_WIDTH * scale
    if width <= 1.0:
        return np.ones(1, np.float32)
    reach = math.ceil(width) - 1
    weights = np.maximum(0.0, 1.0 - np.abs(np.arange(-reach, reach + 1)) / width)
    return (weights / weights.sum()).astype(np.float32)
