"""The batch predictor: uint8 NHWC pixels in, top-k labels and probabilities out.

One ``Predictor`` per worker (Ray actor, Spark Python worker, SageMaker model server); the
model is loaded once and reused for every batch. The host sends uint8 (4x fewer bytes than
float32); conversion and ImageNet normalisation run on the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inference.device import AUTOCAST_DTYPES, Precision, default_precision
from inference.model import LoadedModel

DEFAULT_TOPK = 5


@dataclass
class Predictions:
    label: np.ndarray  # (N,) int64: top-1 class index
    score: np.ndarray  # (N,) float32: its softmax probability
    topk_labels: np.ndarray  # (N, k) int64
    topk_scores: np.ndarray  # (N, k) float32


class Predictor:
    """ResNet50 on one device, in inference mode, channels_last, with optional autocast."""

    def __init__(
        self,
        model: LoadedModel,
        device: torch.device,
        precision: Precision | None = None,
        topk: int = DEFAULT_TOPK,
    ) -> None:
        self.device = device
        self.precision: Precision = precision or default_precision(device)
        self.topk = topk
        self._check_precision()
        self._model = model.module.eval().to(device, memory_format=torch.channels_last)
        # Scaled by 255 so uint8 pixels normalise in one fused sub/div: (x - 255*mean) / (255*std).
        self._mean = torch.tensor(model.mean, device=device).view(1, 3, 1, 1) * 255
        self._std = torch.tensor(model.std, device=device).view(1, 3, 1, 1) * 255

    @torch.inference_mode()
    def __call__(self, pixels: np.ndarray) -> Predictions:
        """Classify ``pixels``: (N, H, W, 3) uint8."""
        if pixels.ndim != 4 or pixels.shape[-1] != 3 or pixels.dtype != np.uint8:
            raise ValueError(f"Predictor expects (N, H, W, 3) uint8 pixels, got {pixels.shape} {pixels.dtype}")
        if len(pixels) == 0:
            return _empty(self.topk)
        return self.predict_on_device(self._to_device(pixels))

    @torch.inference_mode()
    def predict_on_device(self, batch: torch.Tensor) -> Predictions:
        """Classify ``batch``: (N, H, W, 3) uint8 already on ``self.device``.

        What ``__call__`` does after the host-to-device copy; ``inference.benchmark`` times
        it to measure the model alone on the same path.
        """
        probabilities = self._forward(self._normalize(batch))
        scores, labels = probabilities.topk(self.topk, dim=1)
        scores, labels = scores.cpu().numpy(), labels.cpu().numpy().astype(np.int64)
        return Predictions(labels[:, 0].copy(), scores[:, 0].copy(), labels, scores)

    def _to_device(self, pixels: np.ndarray) -> torch.Tensor:
        if not pixels.flags.writeable:  # engines hand out read-only views; torch wants to own writable memory
            pixels = pixels.copy()
        batch = torch.from_numpy(np.ascontiguousarray(pixels))  # (N, H, W, 3) uint8
        if self.device.type == "cuda":
            # pin_memory() returns the tensor itself when a DataLoader already pinned it.
            batch = batch.pin_memory().to(self.device, non_blocking=True)
        return batch

    def _normalize(self, batch: torch.Tensor) -> torch.Tensor:
        # (N, 3, H, W) view of NHWC memory: already channels_last, no copy.
        batch = batch.permute(0, 3, 1, 2).float()
        return batch.sub_(self._mean).div_(self._std)

    def _forward(self, batch: torch.Tensor) -> torch.Tensor:
        dtype = AUTOCAST_DTYPES.get(self.precision)
        with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
            logits = self._model(batch)
        return logits.float().softmax(dim=1)

    def _check_precision(self) -> None:
        if self.precision == "fp16" and self.device.type == "cpu":
            raise ValueError("--precision fp16 needs a GPU; use fp32 or bf16 on CPU")
        if self.precision == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError(f"--precision bf16 is not supported by {torch.cuda.get_device_name(self.device)}; use fp16")


def _empty(topk: int) -> Predictions:
    return Predictions(
        np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros((0, topk), np.int64), np.zeros((0, topk), np.float32)
    )
