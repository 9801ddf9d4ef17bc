"""The exact resize + crop (Pillow's), and the geometry every path shares: the resized size, the crop, its box.

Matches the recipe's eval transform (``Resize(resize, interpolation, antialias) + CenterCrop(crop)``, as
torchvision's weights' ``transforms()``, timm's eval transform or a Hugging Face PIL processor builds it) but
resamples only the source rectangle that survives the crop: the same pixels, without materialising a
full resized image (which for a 12 MP photo or a 20000x10 strip is most of the work).

- ``resize_center_crop`` (a Pillow image): Pillow's antialiased kernel, the reference transform's own pixels;
  the path ``--cpu-resize exact`` keeps.
- ``preprocess.resample.resize_center_crop_pixels`` (a uint8 array): OpenCV, the default, within a stated
  tolerance of these pixels.
- ``resized_size``, ``crop_offsets`` and ``source_box``: where the crop lies, for both and for the device path.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from preprocess.recipe import Recipe

PIL_KERNELS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}  # by Recipe.interpolation


def resize_center_crop(image: Image.Image, recipe: Recipe) -> np.ndarray:
    """Return the (crop, crop, 3) uint8 center crop of ``image`` resized as the recipe says."""
    box = source_box(image.size, recipe)
    out = image.resize((recipe.crop, recipe.crop), PIL_KERNELS[recipe.interpolation], box=box)
    return np.asarray(out, dtype=np.uint8)


def source_box(source: tuple[int, int], recipe: Recipe) -> tuple[float, float, float, float]:
    """The rectangle (left, top, right, bottom) of a (width, height) source that Resize + CenterCrop keeps.

    In pixel-edge coordinates (pixel i spans [i, i+1]), as Pillow's ``resize(box=...)`` and
    ``roi_align(aligned=True)`` both take it; the device path crops with the same boxes.
    """
    width, height = source
    resized_w, resized_h = resized_size(width, height, recipe)
    left, top = crop_offsets(resized_w, resized_h, recipe)
    scale_x, scale_y = width / resized_w, height / resized_h
    return (left * scale_x, top * scale_y, (left + recipe.crop) * scale_x, (top + recipe.crop) * scale_y)


def resized_size(width: int, height: int, recipe: Recipe) -> tuple[int, int]:
    """(width, height) after the recipe's resize: both sides ``resize`` for a squash, else torchvision's rule for an
    int size (short side = ``resize``, long side truncated), which timm and Hugging Face's shortest_edge share."""
    if recipe.crop_mode == "squash":
        return recipe.resize, recipe.resize
    if width <= height:
        return recipe.resize, int(recipe.resize * height / width)
    return int(recipe.resize * width / height), recipe.resize


def crop_offsets(resized_w: int, resized_h: int, recipe: Recipe) -> tuple[int, int]:
    """(left, top) of the centre crop in the resized image: torchvision's ``int(round((h - crop) / 2))``, or
    ``(h - crop) // 2`` for ``crop_offset="floor"`` (Hugging Face's PIL processors)."""
    if recipe.crop_offset == "floor":
        return (resized_w - recipe.crop) // 2, (resized_h - recipe.crop) // 2
    return int(round((resized_w - recipe.crop) / 2.0)), int(round((resized_h - recipe.crop) / 2.0))
