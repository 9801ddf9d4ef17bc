"""Decode JPEGs and resize them on the GPU (``--decode gpu``), for when the CPUs cannot keep up.

Use it where the predictor runs: ``preprocess_on_device`` takes encoded cells and returns a
uint8 NHWC tensor already on the predictor's device. Baseline JPEGs go through batched
nvJPEG (``torchvision.io.decode_jpeg(device="cuda")``) and torchvision's Resize + CenterCrop
on the device; every other cell (PNG, WebP, CMYK JPEG, or a JPEG nvJPEG rejects) falls back to
the CPU path (``preprocess_batch``), so its pixels and its error text are exactly the CPU ones.
On a CPU device the same code runs with libjpeg-turbo, which is how it is tested without a GPU.

The GPU resize is torchvision's tensor resize (bilinear, antialiased), not Pillow's, so pixels
differ from the CPU path by rounding; compare engines with the same ``--decode``.
torchvision 0.29 deprecates ``torchvision.io``'s decoders in favour of TorchCodec; we keep them
while the GPU images we support (torch 2.4+) ship torchvision without TorchCodec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms.v2 import functional as tvf

from preprocess.batch import preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, inspect_image
from preprocess.transform import EvalSize

# JPEG modes nvJPEG decodes to RGB faithfully; CMYK/YCCK JPEGs take the CPU path.
_DEVICE_JPEG_MODES = {"RGB", "L"}
# Images decoded per nvJPEG call: bounds device memory for 12 MP photos (36 MB each at full size).
DECODE_CHUNK = 64


@dataclass
class DeviceBatch:
    pixels: torch.Tensor  # (N, crop, crop, 3) uint8 on the device; zeros where errors[i] is set
    errors: list[str | None]  # None: the row is ready for the model


def preprocess_on_device(
    cells: Sequence[bytes | None],
    device: torch.device,
    size: EvalSize = EvalSize(),
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> DeviceBatch:
    """Decode, resize and crop encoded ``cells`` into one uint8 batch on ``device``."""
    pixels = torch.zeros((len(cells), size.crop, size.crop, 3), dtype=torch.uint8, device=device)
    errors: list[str | None] = [None] * len(cells)
    on_device, on_cpu = _route(cells, max_pixels, errors)
    for start in range(0, len(on_device), DECODE_CHUNK):
        chunk = on_device[start : start + DECODE_CHUNK]
        decoded = _decode_jpegs([cells[i] for i in chunk], device)
        for i, image in zip(chunk, decoded):
            if image is None:
                on_cpu.append(i)  # nvJPEG refused it; the CPU path decodes it or names the problem
            else:
                pixels[i] = _resize_center_crop(image, size).permute(1, 2, 0)
    _cpu_fallback(cells, sorted(on_cpu), size, max_pixels, pixels, errors)
    return DeviceBatch(pixels, errors)


def _route(cells: Sequence[bytes | None], max_pixels: int, errors: list[str | None]) -> tuple[list[int], list[int]]:
    """Split row indices into device-decodable JPEGs and the rest; refuse bombs from the header."""
    on_device, on_cpu = [], []
    for i, cell in enumerate(cells):
        if not cell:
            on_cpu.append(i)  # the CPU path words the error for null and empty cells
            continue
        try:
            header = inspect_image(bytes(cell), max_pixels=max_pixels)
        except ImageError as e:
            errors[i] = str(e)
            continue
        (on_device if header.format == "JPEG" and header.mode in _DEVICE_JPEG_MODES else on_cpu).append(i)
    return on_device, on_cpu


def _decode_jpegs(data: list[bytes], device: torch.device) -> list[torch.Tensor | None]:
    """Batched decode; if the batch fails, decode one by one so one bad JPEG costs only its row."""
    tensors = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    try:
        return list(decode_jpeg(tensors, mode=ImageReadMode.RGB, device=device))
    except RuntimeError:
        return [_decode_one(t, device) for t in tensors]


def _decode_one(tensor: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    try:
        return decode_jpeg(tensor, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:
        return None  # left to the CPU path, which gives the same error text as --decode cpu


def _resize_center_crop(image: torch.Tensor, size: EvalSize) -> torch.Tensor:
    """torchvision's eval transform on a (3, H, W) uint8 tensor, on its device."""
    resized = tvf.resize(image, [size.resize], interpolation=tvf.InterpolationMode.BILINEAR, antialias=True)
    return tvf.center_crop(resized, [size.crop, size.crop])


def _cpu_fallback(
    cells: Sequence[bytes | None],
    rows: list[int],
    size: EvalSize,
    max_pixels: int,
    pixels: torch.Tensor,
    errors: list[str | None],
) -> None:
    if not rows:
        return
    batch = preprocess_batch([cells[i] for i in rows], size, max_pixels=max_pixels)
    pixels[rows] = torch.from_numpy(batch.pixels).to(pixels.device)
    for i, error in zip(rows, batch.errors):
        errors[i] = error
