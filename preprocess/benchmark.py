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

``methods`` names the three with the description a report prints, and ``per_core_rows`` times
them into one row each, ours' speedup over each included.
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


def methods(recipe: Recipe, preset: Callable[[Image.Image], torch.Tensor], preset_name: str) -> dict[str, tuple[str, Method]]:
    """{name: (description, method)}: ours and torchvision's two, all to ``recipe``'s crop; ``preset_name`` names ``preset``."""
    return {
        "ours": ("ours: preprocess_batch (DCT-scaled decode, one resample, uint8)", ours(recipe)),
        "torchvision_resize_crop": (f"torchvision v2 Resize({recipe.resize}) + CenterCrop({recipe.crop}) on PIL, uint8",
                                    torchvision_resize_crop(recipe)),
        "torchvision_preset": (f"torchvision {preset_name} (float, normalised)", torchvision_transform(preset)),
    }


def per_core_rows(images: Sequence[bytes], timed: dict[str, tuple[str, Method]], repeats: int = 3) -> list[dict]:
    """One row per method of ``timed`` (``methods``' table): images/sec per core, and how many times faster ours is."""
    if "ours" not in timed:
        raise ValueError(f"per_core_rows compares every method with 'ours', got only {sorted(timed)}; time methods(...)")
    rates = {name: per_core_rate(method, images, repeats) for name, (_, method) in timed.items()}
    return [{"method": name, "description": timed[name][0], "images": len(images), "repeats": repeats,
             "images_per_sec_per_core": round(rate, 1), "ours_speedup": round(rates["ours"] / rate, 2)}
            for name, rate in rates.items()]


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
