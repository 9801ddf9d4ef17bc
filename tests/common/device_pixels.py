"""For tests: the device stage's output as uint8 NHWC, to hold it pixel by pixel against the CPU path.

``preprocess_on_device`` runs what a job runs across its two stages in one call: the CPU
worker's screen and CPU decodes (``preprocess_routed`` with every decodable JPEG sent to the
device), then ``DeviceStage``; it rounds the device's float images back to uint8 so tests can
compare them with ``preprocess_batch``'s pixels and error rows.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from preprocess.decode import DEFAULT_MAX_PIXELS
from preprocess.device_stage import DeviceStage
from preprocess.split_decode import preprocess_routed
from preprocess.routing import DecodeRouter
from preprocess.recipe import Recipe

_stages: dict[tuple[torch.device, Recipe, int], DeviceStage] = {}
_stages_lock = threading.Lock()


@dataclass
class DeviceBatch:
    pixels: torch.Tensor  # (N, crop, crop, 3) uint8 on the device; zeros where errors[i] is set
    errors: list[str | None]  # None: the row is ready for the model
    decoder: str = ""  # the device decoder that ran


def preprocess_on_device(
    cells: Sequence[bytes | None],
    device: torch.device,
    size: Recipe = Recipe(),
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> DeviceBatch:
    """Decode, resize and crop encoded ``cells`` into one uint8 batch on ``device``."""
    routed = preprocess_routed(cells, DecodeRouter("gpu"), size, max_pixels=max_pixels)
    result = _stage(device, size, max_pixels)(routed)
    pixels = torch.zeros((len(cells), size.crop, size.crop, 3), dtype=torch.uint8, device=device)
    ok = torch.tensor([i for i, e in enumerate(result.errors) if e is None], dtype=torch.long, device=device)
    if len(ok):
        # (M, 3, crop, crop) float -> (M, crop, crop, 3) uint8, rounded like Pillow's output
        pixels[ok] = result.images.round_().clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
    return DeviceBatch(pixels, result.errors, result.decoder)


def _stage(device: torch.device, size: Recipe, max_pixels: int) -> DeviceStage:
    """One stage per device and geometry: nvImageCodec decoders are worth keeping."""
    with _stages_lock:
        key = (device, size, max_pixels)
        if key not in _stages:
            _stages[key] = DeviceStage(device, size, max_pixels=max_pixels)
        return _stages[key]
