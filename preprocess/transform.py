"""Resize the short side and center-crop, in one resampling pass.

Matches torchvision's eval transform (``Resize(resize, bilinear, antialias) +
CenterCrop(crop)``, as ``ResNet50_Weights.*.transforms()`` builds it) but resamples only the
source rectangle that survives the crop: the same pixels, without materialising a full
resized image (which for a 12 MP photo or a 20000x10 strip is most of the work).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from preprocess.recipe import Recipe


def resize_center_crop(image: Image.Image, recipe: Recipe) -> np.ndarray:
    """Return the (crop, crop, 3) uint8 center crop of ``image`` resized to short side ``resize``."""
    box = source_box(image.size, recipe)
    out = image.resize((recipe.crop, recipe.crop), Image.Resampling.BILINEAR, box=box)
    return np.asarray(out, dtype=np.uint8)


def source_box(source: tuple[int, int], recipe: Recipe) -> tuple[float, float, float, float]:
    """The rectangle (left, top, right, bottom) of a (width, height) source that Resize + CenterCrop keeps.

    In pixel-edge coordinates (pixel i spans [i, i+1]), as Pillow's ``resize(box=...)`` and
    ``roi_align(aligned=True)`` both take it; the device path crops with the same boxes.
    """
    width, height = source
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
