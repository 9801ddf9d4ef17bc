"""CPU preprocessing per core: ours against torchvision's standard eval transform.

Use it to time the CPU stage alone on the same image bytes, in one thread and one run
(``runners.compare --stage preprocess`` on a job's input, ``benchmarks/preprocess_bench.py``
on synthetic JPEGs). Each method turns a list of encoded images into model input:

- ``ours``: ``preprocess_batch``, what the job runs by default (``--cpu-resize fast``: whole JPEGs through
  libjpeg-turbo direct, one OpenCV prefilter + resize of the kept rectangle, uint8 out; normalisation happens later,
  on the device), within ``preprocess.resample.PIXEL_TOLERANCE`` of the exact path.
- ``ours_exact``: ``preprocess_batch(cpu_resize="exact")`` (Pillow: decode at reduced size, one resize of the kept
  rectangle), torchvision's pixels: the job's default until the fast path became it (fd2d3cf's).
- ``torchvision_resize_crop``: PIL decode + ``transforms.v2`` Resize + CenterCrop, uint8
  out: the same output as ours, the way torchvision computes it.
- ``torchvision_transform(preset)``: PIL decode + a full torchvision preset such as
  ``ResNet50_Weights.DEFAULT.transforms()`` (also to float and normalised on the CPU): what
  a user writes by default.

``methods`` names the three with the description a report prints, and ``per_core_rows`` times
them into one row each, ours' speedup over each included. ``paired_per_core`` times methods in
turn, repeat by repeat, in CPU seconds of this thread: on a loaded machine a ratio of two methods
holds where a wall-clock rate does not.
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


def ours_exact(recipe: Recipe) -> Method:
    return lambda images: preprocess_batch(images, recipe, cpu_resize="exact")


def torchvision_resize_crop(recipe: Recipe) -> Method:
    """torchvision's Resize + CenterCrop for ``recipe`` (its kernel; both sides for a squash), on PIL, uint8."""
    kernel = InterpolationMode.BICUBIC if recipe.interpolation == "bicubic" else InterpolationMode.BILINEAR
    size = [recipe.resize, recipe.resize] if recipe.crop_mode == "squash" else recipe.resize
    resize_crop = v2.Compose([v2.Resize(size, kernel, antialias=True), v2.CenterCrop(recipe.crop)])
    return lambda images: np.stack([np.asarray(resize_crop(_pil(b)), np.uint8) for b in images])  # (N, crop, crop, 3)


def torchvision_transform(transform: Callable[[Image.Image], torch.Tensor]) -> Method:
    return lambda images: torch.stack([transform(_pil(b)) for b in images])  # (N, 3, crop, crop) float


def methods(recipe: Recipe, preset: Callable[[Image.Image], torch.Tensor], preset_name: str) -> dict[str, tuple[str, Method]]:
    """{name: (description, method)}: ours and torchvision's two, all to ``recipe``'s crop; ``preset_name`` names ``preset``."""
    return {
        "ours": ("ours: preprocess_batch (libjpeg-turbo decode + one OpenCV resize, uint8)", ours(recipe)),
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


def paired_per_core(timed: dict[str, Method], images: Sequence[bytes], repeats: int = 5) -> dict[str, list[float]]:
    """{name: [images per CPU-second of this thread, one per repeat]}: every method once per repeat, in turn.

    Each repeat runs the methods back to back, so the i-th figures of two methods are a pair
    measured under the same load; compare them pair by pair (``paired_ratio``).
    """
    if not images or repeats < 1:
        raise ValueError(f"need at least one image and one repeat, got {len(images)} images, {repeats} repeats")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for method in timed.values():
            method(images[:2])  # warm-up: imports, first-call allocations
        rates: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(repeats):
            for name, method in timed.items():
                started = time.thread_time()
                method(images)
                rates[name].append(len(images) / max(time.thread_time() - started, 1e-9))
    finally:
        torch.set_num_threads(threads)
    return rates


def paired_ratio(faster: list[float], slower: list[float]) -> float:
    """Median over the repeats of ``faster[i] / slower[i]`` (rates from one ``paired_per_core`` call)."""
    return float(np.median(np.asarray(faster) / np.asarray(slower)))


def _pil(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")
