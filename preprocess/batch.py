"""Preprocess a batch of image cells into one uint8 array plus per-row errors.

This is the function every engine calls. A bad image never fails the batch: its row gets
zeros in ``pixels`` and a reason in ``errors``, and the predictor skips it.

Every image takes the Pillow path: torchvision's eval transform's pixels, and every error row's
words. ``fast_jpeg=True`` (the benchmarks', until a GPU session's figures and a trained model's
agreement decide it) sends whole JPEGs through ``preprocess.fast_jpeg`` first: libjpeg-turbo
direct, then an OpenCV resample within ``preprocess.transform.PIXEL_TOLERANCE`` of those pixels;
a JPEG it declines still takes Pillow. It needs the ``fastjpeg`` extra (simplejpeg, OpenCV).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, decode_image, pixels_from_raw
from preprocess.recipe import IMAGENET_RECIPE, Recipe
from preprocess.transform import resize_center_crop

ImageCell = bytes | np.ndarray | None
RawShape = tuple[int, int, int]  # (H, W, C) of a raw pixel cell


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
    fast_jpeg: bool = False,
) -> PreprocessedBatch:
    """Decode (or wrap raw pixels), resize and crop every cell.

    ``raw_shapes``: one (H, W, C) per cell when cells hold raw uint8 pixels rather than
    encoded bytes. ``fast_jpeg=True``: whole JPEGs through libjpeg-turbo and OpenCV, faster, within
    ``PIXEL_TOLERANCE`` of torchvision's pixels (``benchmarks.preprocess_bench`` times both on the same images).
    """
    pixels = np.zeros((len(cells), recipe.crop, recipe.crop, 3), dtype=np.uint8)
    errors: list[str | None] = []
    for i, cell in enumerate(cells):
        try:
            pixels[i] = _preprocess_one(cell, recipe, raw_shapes[i] if raw_shapes else None, max_pixels, fast_jpeg)
            errors.append(None)
        except ImageError as e:
            errors.append(str(e))
    return PreprocessedBatch(pixels=pixels, errors=errors)


def _preprocess_one(
    cell: ImageCell, recipe: Recipe, raw_shape: RawShape | None, max_pixels: int, fast_jpeg: bool
) -> np.ndarray:
    if cell is None:
        raise ImageError("missing image: the image cell is null")
    if raw_shape is not None:
        if None in raw_shape:
            raise ImageError(f"raw pixels: incomplete shape {raw_shape}")
        image = pixels_from_raw(cell, raw_shape)
        return resize_center_crop(image, recipe)
    data = bytes(cell)
    if fast_jpeg and recipe.interpolation == "bilinear":  # OpenCV's resample stands in for Pillow's bilinear only
        from preprocess.fast_jpeg import decode_whole_jpeg  # the fastjpeg extra's libraries, only when asked for
        from preprocess.transform import resize_center_crop_pixels

        decoded = decode_whole_jpeg(data, min_size=recipe.resize, max_pixels=max_pixels)
        if decoded is not None:
            return resize_center_crop_pixels(decoded, recipe)
    return resize_center_crop(decode_image(data, min_size=recipe.resize, max_pixels=max_pixels), recipe)
