"""Prefilter taps that make OpenCV's 2- or 4-tap interpolation stand in for Pillow's antialiased kernels.

Use ``prefilter_taps`` to plan the fast resample (``preprocess.resample``). Pillow (and so torchvision's,
timm's and Hugging Face's PIL transforms) resizes with its kernel widened by the downscale factor ``s``:
bilinear is a triangle of radius ``s``, bicubic Keys' cubic (a = -0.5) of radius ``2 s``. OpenCV's
``resize``/``remap`` interpolate with a fixed kernel (linear, or cubic with a = -0.75) and no widening. A
short filter run first at the source's resolution closes the gap: its taps are chosen by least squares so
that, at every interpolation phase, taps-then-interpolation weighs the source pixels as Pillow's kernel
does. They can also shift the image by a fraction of a pixel (``shift``), so that the sampler may start at
a whole pixel. One set of taps serves every phase, so a few tenths of a level of difference remain
(docs/model.md states them per recipe); Pillow's own rounding is about 0.15 of that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# The kernels as Pillow defines them (Resample.c): support radius and weight at distance x (source pixels at s <= 1).
SUPPORT = {"bilinear": 1.0, "bicubic": 2.0}
_KEYS_A = -0.5  # Pillow's bicubic
_OPENCV_CUBIC_A = -0.75  # OpenCV's INTER_CUBIC
# Interpolation phases the fit weighs equally; 32 gives the same taps as every phase a 224-pixel crop meets to
# 0.01 level, and keeps a plan under a millisecond for an image size first seen.
PHASES = 32
# How many source pixels either side of the kernel's reach the fit still scores: the interpolation's own taps.
_SCORED_MARGIN = 3
# Outer tap pairs both smaller than this are dropped (each moves a full-swing edge by at most 1 level; a bilinear
# upscale's taps become the single tap 1: no filter at all): fewer taps, a faster prefilter, the same mean difference.
_NEGLIGIBLE = 4e-3


@dataclass(frozen=True)
class Fit:
    taps: np.ndarray  # float32, odd length, centre in the middle; they sum to 1
    residual: float  # root mean square of the weights' misfit, over phases and pixels: how far from Pillow's kernel


def prefilter_taps(kernel: str, scale: float, interpolation: str, shift: float = 0.0) -> Fit:
    """Taps for a resize by ``scale`` source pixels per output pixel, and how well they fit.

    ``kernel``: Pillow's (``bilinear`` or ``bicubic``); ``interpolation``: what samples after the taps (``linear``
    or ``cubic``, OpenCV's); ``shift``: in [-0.5, 0.5], how far right of the sampler's positions Pillow's kernel sits.
    """
    reach = max(1, math.ceil(SUPPORT[kernel] * max(scale, 1.0) - 0.5))
    phases = (np.arange(PHASES) + 0.5) / PHASES
    offsets = np.arange(-reach - _SCORED_MARGIN, reach + _SCORED_MARGIN + 1)  # source pixels, from floor(position)
    # Target: Pillow's weights on those pixels for a sample at floor + phase + shift, normalised as Pillow does.
    target = _kernel(kernel, (offsets[None, :] - phases[:, None] - shift) / max(scale, 1.0))
    target /= target.sum(axis=1, keepdims=True)
    # Ours: pixel ``offset`` reaches the sample through tap q and the interpolation's tap at offset - q.
    interpolation_offset = offsets[:, None] - np.arange(-reach, reach + 1)[None, :]  # (pixels, taps)
    weights = _interpolation(interpolation, phases)  # (phases, 4): offsets -1, 0, 1, 2
    inside = (interpolation_offset >= -1) & (interpolation_offset <= 2)
    design = np.where(inside, weights[:, np.clip(interpolation_offset, -1, 2) + 1], 0.0)  # (phases, pixels, taps)
    rows = design.reshape(-1, 2 * reach + 1)
    # The taps sum to 1 (a flat image stays flat), held by a heavily weighted extra row.
    rows = np.vstack([rows, np.full(2 * reach + 1, 1e3)])
    wanted = np.append(target.ravel(), 1e3)
    taps = np.linalg.lstsq(rows, wanted, rcond=None)[0]
    residual = float(np.sqrt(np.mean((rows[:-1] @ taps - wanted[:-1]) ** 2)))
    while len(taps) > 1 and max(abs(taps[0]), abs(taps[-1])) < _NEGLIGIBLE:  # e.g. a bilinear upscale: no filter at all
        taps = taps[1:-1]
    return Fit((taps / taps.sum()).astype(np.float32), residual)


def _kernel(kernel: str, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    if kernel == "bilinear":
        return np.maximum(0.0, 1.0 - x)
    return _cubic(x, _KEYS_A)


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _interpolation(interpolation: str, phases: np.ndarray) -> np.ndarray:
    """(phases, 4): the weights OpenCV's INTER_LINEAR or INTER_CUBIC gives the pixels at offsets -1, 0, 1, 2 from
    floor(position), at each phase."""
    if interpolation == "linear":
        zero = np.zeros_like(phases)
        return np.stack([zero, 1 - phases, phases, zero], axis=1)
    return np.stack([_cubic(np.abs(offset - phases), _OPENCV_CUBIC_A) for offset in (-1, 0, 1, 2)], axis=1)
