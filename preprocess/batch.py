"""Preprocess a batch of image cells into one uint8 array plus per-row errors.

This is the function every engine calls. A bad image never fails the batch: its row gets
zeros in ``pixels`` and a reason in ``errors``, and the predictor skips it.

Two ways to resize, one per job (``--cpu-resize``), both for every recipe:
- ``fast`` (the default): whole JPEGs are decoded by libjpeg-turbo directly (``preprocess.fast_jpeg``: the same
  pixels as Pillow's decode), every other image by Pillow; then OpenCV resizes and crops
  (``preprocess.resample``), within the tolerance docs/model.md states per recipe of the model's own transform.
  1.4-1.6x the images per core of the exact path on photo-like 500x375 JPEGs (BENCHMARKS.md).
- ``exact``: Pillow decodes, resizes and crops every image: the reference transform's own pixels.
Either way, every error row is worded by the Pillow path: the fast decode declines whatever it is not sure of,
and Pillow then decodes it or words its refusal (routing, not a fallback on error).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, decode_image, pixels_from_raw, raw_array
from preprocess.recipe import IMAGENET_RECIPE, Recipe
from preprocess.transform import resize_center_crop

ImageCell = bytes | np.ndarray | None
RawShape = tuple[int, int, int]  # (H, W, C) of a raw pixel cell
CpuResize = Literal["fast", "exact"]
CPU_RESIZES: tuple[CpuResize, ...] = ("fast", "exact")
# What the fast path imports (only when it runs, so that the exact path needs neither), by the package that brings it.
FAST_LIBRARIES = {"cv2": "opencv-python-headless", "simplejpeg": "simplejpeg"}


def require_fast_libraries() -> None:
    """Refuse in one line, before any work, a fast path whose libraries are not installed (an image without OpenCV)."""
    missing = [package for module, package in FAST_LIBRARIES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise ImportError(f"--cpu-resize fast needs {' and '.join(missing)} (dependencies of this package): "
                          f"pip install {' '.join(missing)}, or pass --cpu-resize exact")


@dataclass
class PreprocessedBatch:
    pixels: np.ndarray  # (N, crop, crop, 3) uint8; zeros where errors[i] is set
    errors: list[str | None]  # None: the row is ready for the model

    @property
    def ok(self) -> np.ndarray:
        """Boolean mask of the rows that decoded."""
        return np.array([e is None for e in self.errors], dtype=bool)


def preprocess_batch(
    cells: Sequence[ImageCell],
    recipe: Recipe = IMAGENET_RECIPE,
    *,
    raw_shapes: Sequence[RawShape] | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    cpu_resize: CpuResize = "fast",
) -> PreprocessedBatch:
    """Decode (or wrap raw pixels), resize and crop every cell.

    ``raw_shapes``: one (H, W, C) per cell when cells hold raw uint8 pixels rather than encoded bytes.
    ``cpu_resize``: ``fast`` (OpenCV, within the recipe's stated tolerance) or ``exact`` (Pillow's pixels).
    """
    if cpu_resize not in CPU_RESIZES:
        raise ValueError(f"cpu_resize must be one of {', '.join(CPU_RESIZES)}, got {cpu_resize!r}")
    pixels = np.zeros((len(cells), recipe.crop, recipe.crop, 3), dtype=np.uint8)
    errors: list[str | None] = []
    for i, cell in enumerate(cells):
        try:
            pixels[i] = _preprocess_one(cell, recipe, raw_shapes[i] if raw_shapes else None, max_pixels, cpu_resize)
            errors.append(None)
        except ImageError as e:
            errors.append(str(e))
    return PreprocessedBatch(pixels=pixels, errors=errors)


def _preprocess_one(
    cell: ImageCell, recipe: Recipe, raw_shape: RawShape | None, max_pixels: int, cpu_resize: CpuResize
) -> np.ndarray:
    from preprocess.resample import resize_center_crop_pixels  # OpenCV: only where the fast path runs

    if cell is None:
        raise ImageError("missing image: the image cell is null")
    if raw_shape is not None:
        if None in raw_shape:
            raise ImageError(f"raw pixels: incomplete shape {raw_shape}")
        if cpu_resize == "exact":
            return resize_center_crop(pixels_from_raw(cell, raw_shape), recipe)
        return resize_center_crop_pixels(raw_array(cell, raw_shape), recipe)
    data = bytes(cell)
    if cpu_resize == "exact":
        return resize_center_crop(decode_image(data, min_size=recipe.resize, max_pixels=max_pixels), recipe)
    from preprocess.fast_jpeg import decode_whole_jpeg  # simplejpeg: imported where the fast path runs, never before
    decoded = decode_whole_jpeg(data, min_size=recipe.resize, max_pixels=max_pixels)
    if decoded is None:  # not a whole JPEG libjpeg-turbo takes strictly: Pillow decodes it, or words its error row
        decoded = np.asarray(decode_image(data, min_size=recipe.resize, max_pixels=max_pixels))
    return resize_center_crop_pixels(decoded, recipe)
