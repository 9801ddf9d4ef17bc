"""CPU preprocessing per core: ours against torchvision's standard eval transform.

Use it to time the CPU stage alone on the same image bytes, in one thread and one run
(``runners.compare --stage preprocess`` on a job's input, ``benchmarks/preprocess_bench.py``
on synthetic JPEGs). Each method turns a list of encoded images into model input:

- ``ours``: ``preprocess_batch`` (DCT-scaled JPEG decode, one resample of the kept
  rectangle, uint8 out; normalisation happens later, on the device).
- ``torchvision_resize_crop``: PIL decode + ``transforms.v2`` Resize + CenterCrop, uint8
  out: the same output as ours, the way torchvision computes it.
- ``torchvision_transform(preset)``: PIL decode + a full torchvision preset such as
  ``ResNet50_Weights.DEFAULT.transforms()`` (also to float and normalised on the CPU): what
  a user writes by default.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode, v2

from preprocess.batch import preprocess_batch
from preprocess.recipe import Recipe

Method = Callable[[Sequence[bytes]], object]


def ours(recipe: Recipe) -> Method:
    return lambda images: preprocess_batch(images, recipe)


def torchvision_resize_crop(recipe: Recipe) -> Method:
    resize_crop = v2.Compose([v2.Resize(recipe.resize, InterpolationMode.BILINEAR, antialias=True), v2.CenterCrop(recipe.crop)])
    return lambda images: np.stack([np.asarray(resize_crop(_pil(b)), np.uint8) for b in images])  # (N, crop, crop, 3)


def torchvision_transform(transform: Callable[[Image.Image], torch.Tensor]) -> Method:
    return lambda images: torch.stack([transform(_pil(b)) for b in images])  # (N, 3, crop, crop) float


def per_core_rate(method: Method, images: Sequence[bytes], repeats: int = 3) -> float:
    """Images/sec of ``method`` on one thread: warm-up untimed, best of ``repeats``."""
    if not images or repeats < 1:
        raise ValueError(f"need at least one image and one repeat, got {len(images)} images, {repeats} repeats")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # per core: torch's float/normalise ops would otherwise use every core
    try:
        method(images[:2])  # warm-up: imports, first-call allocations
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            method(images)
            best = min(best, time.perf_counter() - started)
    finally:
        torch.set_num_threads(threads)
    return len(images) / best


def _pil(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")
