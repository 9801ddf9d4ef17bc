"""Resize the short side and center-crop, in one resampling pass.

Matches torchvision's eval transform (``Resize(resize, bilinear, antialias) +
CenterCrop(crop)``, as ``ResNet50_Weights.*.transforms()`` builds it) but resamples only the
source rectangle that survives the crop: the same pixels, without materialising a full
resized image (which for a 12 MP photo or a 20000x10 strip is most of the work).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class EvalSize:
    """The model's eval geometry, read from its torchvision weights' transforms."""

    resize: int = 232  # short side after resize; ResNet50_Weights.IMAGENET1K_V2 uses 232 (V1: 256)
    crop: int = 224  # square center crop fed to the network

    def __post_init__(self) -> None:
        if not 0 < self.crop <= self.resize:
            raise ValueError(f"EvalSize needs 0 < crop <= resize, got crop={self.crop}, resize={self.resize}")


def resize_center_crop(image: Image.Image, size: EvalSize) -> np.ndarray:
    """Return the (crop, crop, 3) uint8 center crop of ``image`` resized to short side ``resize``."""
    box = source_box(image.size, size)
    out = image.resize((size.crop, size.crop), Image.Resampling.BILINEAR, box=box)
    return np.asarray(out, dtype=np.uint8)


def source_box(source: tuple[int, int], size: EvalSize) -> tuple[float, float, float, float]:
    """The rectangle (left, top, right, bottom) of a (width, height) source that Resize + CenterCrop keeps.

    In pixel-edge coordinates (pixel i spans [i, i+1]), as Pillow's ``resize(box=...)`` and
    ``roi_align(aligned=True)`` both take it; the device path crops with the same boxes.
    """
    width, height = source
    resized_w, resized_h = _resized_size(width, height, size.resize)
    # torchvision's center_crop: top = int(round((h - crop) / 2)).
    top = int(round((resized_h - size.crop) / 2.0))
    left = int(round((resized_w - size.crop) / 2.0))
    scale_x, scale_y = width / resized_w, height / resized_h
    return (left * scale_x, top * scale_y, (left + size.crop) * scale_x, (top + size.crop) * scale_y)


def _resized_size(width: int, height: int, short: int) -> tuple[int, int]:
    """torchvision's F.resize size rule for an int size: short side = ``short``, long side truncated."""
    if width <= height:
        return short, int(short * height / width)
    return int(short * width / height), short
