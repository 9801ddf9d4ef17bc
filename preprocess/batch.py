"""Preprocess a batch of image cells into one uint8 array plus per-row errors.

This is the function every engine calls. A bad image never fails the batch: its row gets
zeros in ``pixels`` and a reason in ``errors``, and the predictor skips it.
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
) -> PreprocessedBatch:
    """Decode (or wrap raw pixels), resize and crop every cell.

    ``raw_shapes``: one (H, W, C) per cell when cells hold raw uint8 pixels rather than
    encoded bytes.
    """
    pixels = np.zeros((len(cells), recipe.crop, recipe.crop, 3), dtype=np.uint8)
    errors: list[str | None] = []
    for i, cell in enumerate(cells):
        try:
            pixels[i] = _preprocess_one(cell, recipe, raw_shapes[i] if raw_shapes else None, max_pixels)
            errors.append(None)
        except ImageError as e:
            errors.append(str(e))
    return PreprocessedBatch(pixels=pixels, errors=errors)


def _preprocess_one(
    cell: ImageCell, recipe: Recipe, raw_shape: RawShape | None, max_pixels: int
) -> np.ndarray:
    if cell is None:
        raise ImageError("missing image: the image cell is null")
    if raw_shape is not None:
        if None in raw_shape:
            raise ImageError(f"raw pixels: incomplete shape {raw_shape}")
        image = pixels_from_raw(cell, raw_shape)
    else:
        image = decode_image(bytes(cell), min_size=recipe.resize, max_pixels=max_pixels)
    return resize_center_crop(image, recipe)
