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

Several models' pixels (``--models``) come from one read and the fewest decodes (``preprocess_many``): an image is
decoded once for every recipe whose decode would be the same, the DCT scale libjpeg-turbo (and Pillow's ``draft``)
picks for it being the only thing a recipe changes in a decode. Recipes of one short side share a decode always; of
several, when a JPEG's DCT scale comes out the same for them (most photos: a scale is a power of two), else the image
is decoded once per scale. So each model's pixels are exactly those a run of that model alone makes. A row that does
not decode is an error row for every model, with the error its first recipe's decode gave.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, decode_image, inspect_image, pixels_from_raw, raw_array
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
    return preprocess_many(cells, [recipe], raw_shapes=raw_shapes, max_pixels=max_pixels, cpu_resize=cpu_resize).batches[0]


@dataclass
class ManyBatches:
    """Each recipe's pixels of one batch of cells, one error per row for them all, and the decodes it took."""

    batches: list[PreprocessedBatch]  # one per recipe, in the recipes' order (their errors are the same list)
    decodes: int  # decode calls made: the images, or more where two recipes' DCT scales differed


def preprocess_many(cells: Sequence[ImageCell], recipes: Sequence[Recipe], *, raw_shapes: Sequence[RawShape] | None = None,
                    max_pixels: int = DEFAULT_MAX_PIXELS, cpu_resize: CpuResize = "fast") -> ManyBatches:
    """Decode (or wrap raw pixels) each cell as few times as its recipes allow, then resize and crop it per recipe."""
    if cpu_resize not in CPU_RESIZES:
        raise ValueError(f"cpu_resize must be one of {', '.join(CPU_RESIZES)}, got {cpu_resize!r}")
    pixels = [np.zeros((len(cells), recipe.crop, recipe.crop, 3), dtype=np.uint8) for recipe in recipes]
    errors: list[str | None] = []
    decodes = 0
    for i, cell in enumerate(cells):
        try:
            images, made = _decoded(cell, recipes, raw_shapes[i] if raw_shapes else None, max_pixels, cpu_resize)
            decodes += made
            for k, (recipe, image) in enumerate(zip(recipes, images)):
                pixels[k][i] = _resized(image, recipe, cpu_resize)
            errors.append(None)
        except ImageError as e:
            errors.append(str(e))
    return ManyBatches([PreprocessedBatch(p, errors) for p in pixels], decodes)


def _decoded(cell: ImageCell, recipes: Sequence[Recipe], raw_shape: RawShape | None, max_pixels: int,
             cpu_resize: CpuResize) -> tuple[list[object], int]:
    """Each recipe's decoded image (one object shared by the recipes whose decode is the same), and decodes made."""
    if cell is None:
        raise ImageError("missing image: the image cell is null")
    if raw_shape is not None:
        if None in raw_shape:
            raise ImageError(f"raw pixels: incomplete shape {raw_shape}")
        image = pixels_from_raw(cell, raw_shape) if cpu_resize == "exact" else raw_array(cell, raw_shape)
        return [image] * len(recipes), 0
    data = bytes(cell)
    keys = _decode_keys(data, recipes, max_pixels)
    made: dict[object, object] = {}
    for key, recipe in zip(keys, recipes):
        if key not in made:
            made[key] = _decode(data, recipe.resize, max_pixels, cpu_resize)
    return [made[key] for key in keys], len(made)


def _decode_keys(data: bytes, recipes: Sequence[Recipe], max_pixels: int) -> list[object]:
    """For each recipe, what its decode depends on: recipes of equal keys share one decode."""
    sizes = [recipe.resize for recipe in recipes]
    if len(set(sizes)) == 1:
        return sizes  # one short side: one decode, whatever the image (no header read for it)
    from preprocess.fast_jpeg import dct_reduction  # the scale a JPEG is decoded at: the one thing a recipe changes

    header = inspect_image(data, max_pixels=max_pixels)
    if header.format != "JPEG":
        return [0] * len(recipes)  # no DCT scaling: decoded the same for every recipe
    width, height = header.size
    return [dct_reduction(width, height, size) for size in sizes]


def _decode(data: bytes, min_size: int, max_pixels: int, cpu_resize: CpuResize) -> object:
    """The image as ``preprocess.batch`` decodes it for a recipe of short side ``min_size``."""
    if cpu_resize == "exact":
        return decode_image(data, min_size=min_size, max_pixels=max_pixels)
    from preprocess.fast_jpeg import decode_whole_jpeg  # simplejpeg: where the fast path runs, never before

    decoded = decode_whole_jpeg(data, min_size=min_size, max_pixels=max_pixels)
    if decoded is None:  # not a whole JPEG libjpeg-turbo takes strictly: Pillow decodes it, or words its error row
        decoded = np.asarray(decode_image(data, min_size=min_size, max_pixels=max_pixels))
    return decoded


def _resized(image: object, recipe: Recipe, cpu_resize: CpuResize) -> np.ndarray:
    if cpu_resize == "exact":
        return resize_center_crop(image, recipe)
    from preprocess.resample import resize_center_crop_pixels  # OpenCV: only where the fast path runs

    return resize_center_crop_pixels(image, recipe)
