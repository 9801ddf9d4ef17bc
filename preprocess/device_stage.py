"""The GPU actor's preprocessing: a ``RoutedBatch`` -> one float batch on the device, in row order.

Use one ``DeviceStage`` per predictor (GPU actor), called from the predictor's stream:

    with predictor.stream():
        images = stage(routed)                       # DeviceImages
        predictions = predictor.predict_images(images.images)

Only batched device work per batch: one decode call for the screened JPEGs, one resize + crop
kernel (``preprocess.device_resize``), one upload of the pixels the CPU workers decoded, and two
index copies that put both in row order. A JPEG the device decoder still refuses (rare: the screen
passed it) is decoded by the CPU path here, so its pixels or its error row are the CPU path's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from preprocess.batch import CpuResize, preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS
from preprocess.device_decode import DecoderName, JpegDecoder
from preprocess.device_resize import resize_center_crop_batch
from preprocess.split_decode import RoutedBatch
from preprocess.recipe import IMAGENET_RECIPE, Recipe


@dataclass
class DeviceImages:
    images: torch.Tensor  # (M, 3, crop, crop) float32 in [0, 255] on the device: the rows without errors, in row order
    errors: list[str | None]  # (N,) per row of the batch; None: the row has its image in ``images``
    decoder: str  # which decoder ran: nvimgcodec, nvjpeg or cpu


class DeviceStage:
    """Decode, resize and crop on ``device``; merge with the CPU workers' pixels."""

    def __init__(
        self,
        device: torch.device,
        recipe: Recipe = IMAGENET_RECIPE,
        *,
        decoder: DecoderName | None = None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        cpu_resize: CpuResize = "fast",
    ) -> None:
        self.device = device
        self.recipe = recipe
        self.max_pixels = max_pixels
        self.cpu_resize = cpu_resize  # for the JPEGs the device decoder refuses: the CPU path, as the CPU workers run it
        self.decoder = JpegDecoder(device, decoder)

    def __call__(self, batch: RoutedBatch) -> DeviceImages:
        errors = list(batch.errors)
        decoded, refused = self._decode(batch.encoded)
        host_rows, host_pixels = self._host_part(batch, refused, errors)
        device_rows = [row for row, image in zip(batch.device_rows, decoded) if image is not None]
        parts = [(host_rows, _upload(host_pixels, self.device))] if host_rows else []
        if device_rows:
            parts.append((device_rows, resize_center_crop_batch([i for i in decoded if i is not None], self.recipe)))
        return DeviceImages(_in_row_order(parts, errors, self.recipe, self.device), errors, self.decoder.name)

    def _decode(self, encoded: list[bytes]) -> tuple[list[torch.Tensor | None], list[int]]:
        if not encoded:
            return [], []
        decoded = self.decoder.decode(encoded)
        return decoded, [k for k, image in enumerate(decoded) if image is None]

    def _host_part(self, batch: RoutedBatch, refused: list[int], errors: list[str | None]) -> tuple[list[int], np.ndarray]:
        """Rows with host pixels: the CPU workers' (errors dropped) and the CPU path's for refused JPEGs."""
        rows = [row for k, row in enumerate(batch.cpu_rows) if errors[row] is None]
        pixels = batch.pixels[[k for k, row in enumerate(batch.cpu_rows) if errors[row] is None]]
        if refused:
            fallback = preprocess_batch([batch.encoded[k] for k in refused], self.recipe, max_pixels=self.max_pixels,
                                        cpu_resize=self.cpu_resize)
            for k, error in zip(refused, fallback.errors):
                errors[batch.device_rows[k]] = error
            rows += [batch.device_rows[k] for k, e in zip(refused, fallback.errors) if e is None]
            pixels = np.concatenate([pixels, fallback.pixels[fallback.ok]])
        return rows, pixels


def _upload(pixels: np.ndarray, device: torch.device) -> torch.Tensor:
    """(n, crop, crop, 3) uint8 host pixels -> (n, 3, crop, crop) float32 on ``device``."""
    tensor = torch.from_numpy(np.ascontiguousarray(pixels))
    if device.type == "cuda":
        tensor = tensor.pin_memory().to(device, non_blocking=True)  # pinned: the copy overlaps other work
    return tensor.permute(0, 3, 1, 2).float()


def _in_row_order(parts: list[tuple[list[int], torch.Tensor]], errors: list[str | None], recipe: Recipe, device: torch.device) -> torch.Tensor:
    """Scatter each part's images to its rows' places among the rows without errors."""
    ok = [row for row, error in enumerate(errors) if error is None]
    place = {row: k for k, row in enumerate(ok)}
    parts = [(rows, images) for rows, images in parts if rows]
    if len(parts) == 1 and parts[0][0] == ok:
        return parts[0][1].contiguous()  # one source, already in row order: no copy
    out = torch.empty((len(ok), 3, recipe.crop, recipe.crop), dtype=torch.float32, device=device)
    for rows, images in parts:
        index = torch.tensor([place[row] for row in rows], device=device)
        out.index_copy_(0, index, images)
    return out
