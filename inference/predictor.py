"""The batch predictor: uint8 NHWC pixels in, top-k labels and probabilities out.

One ``Predictor`` per worker (Ray actor, Spark Python worker, SageMaker model server); the
model is loaded once and reused for every batch. The host sends uint8 (4x fewer bytes than
float32); conversion and ImageNet normalisation run on the device.

Two ways in: ``predictor(pixels)`` takes (N, H, W, 3) uint8 from the host or the device;
``predictor.predict_images(images)`` takes (N, 3, H, W) float pixels in [0, 255] already on the
device (what ``preprocess.device_stage`` makes), so device-decoded images never round-trip
through uint8.

On CUDA each calling thread gets its own stream (``predictor.stream()``), and copies go through
pinned memory without blocking, so an engine that calls from two threads (the Ray GPU actors do)
overlaps one batch's decode, copies and readback with the other's compute. ``compile=True``
compiles the model (``inference.compile``) and pads every batch to ``batch_size`` so it
compiles once.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from inference.compile import DEFAULT_COMPILE_MODE, compile_model
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
        *,
        compile: bool = False,
        batch_size: int | None = None,
        compile_mode: str = DEFAULT_COMPILE_MODE,
    ) -> None:
        self.device = device
        self.precision: Precision = precision or default_precision(device)
        self.topk = topk
        self._check_precision()
        if compile and not batch_size:
            raise ValueError("Predictor(compile=True) needs batch_size: batches are padded to it so the model compiles once")
        self._pad_to = batch_size if compile else None
        module = model.module.eval().to(device, memory_format=torch.channels_last)
        self._model = compile_model(module, compile_mode) if compile else module
        # Scaled by 255 so uint8 pixels normalise in one fused sub/div: (x - 255*mean) / (255*std).
        self._mean = torch.tensor(model.recipe.mean, device=device).view(1, 3, 1, 1) * 255
        self._std = torch.tensor(model.recipe.std, device=device).view(1, 3, 1, 1) * 255
        self._streams = threading.local()  # one CUDA stream per calling thread
        if compile:
            crop = model.recipe.crop
            self(np.zeros((batch_size, crop, crop, 3), np.uint8))  # compile now, not in the first batch

    @torch.inference_mode()
    def __call__(self, pixels: np.ndarray | torch.Tensor) -> Predictions:
        """Classify ``pixels``: (N, H, W, 3) uint8, in host memory or already on the device."""
        _check_pixels(pixels)
        if len(pixels) == 0:
            return _empty(self.topk)
        with self.stream():
            batch = self._to_device(pixels).permute(0, 3, 1, 2).float()  # (N, 3, H, W) view of NHWC: channels_last
            return self._predict(batch.sub_(self._mean).div_(self._std), len(pixels))

    @torch.inference_mode()
    def predict_images(self, images: torch.Tensor) -> Predictions:
        """Classify ``images``: (N, 3, H, W) float32 pixels in [0, 255], on this predictor's device.

        Made on another stream than ``self.stream()``? This stream waits for the caller's, and the
        tensor is marked used here so the caller's allocator cannot hand its memory out early.
        """
        _check_images(images, self.device)
        if len(images) == 0:
            return _empty(self.topk)
        with self.stream(images):
            normalised = torch.empty_like(images, memory_format=torch.channels_last)  # (N, 3, H, W)
            torch.sub(images, self._mean, out=normalised)
            return self._predict(normalised.div_(self._std), len(images))

    def stream(self, uses: torch.Tensor | None = None) -> AbstractContextManager:
        """Run on this thread's CUDA stream (a no-op on CPU); it first waits for the caller's stream.

        Enter it around device preprocessing too, so decode, resize and model share one stream.
        ``uses``: a device tensor made on the caller's stream that this stream will read.
        """
        if self.device.type != "cuda":
            return nullcontext()
        if not hasattr(self._streams, "stream"):
            self._streams.stream = torch.cuda.Stream(self.device)
        caller = torch.cuda.current_stream(self.device)
        if caller != self._streams.stream:
            # A batch already on the device was made on the caller's stream: wait for it.
            self._streams.stream.wait_stream(caller)
            if uses is not None:
                uses.record_stream(self._streams.stream)
        return torch.cuda.stream(self._streams.stream)

    def _predict(self, batch: torch.Tensor, rows: int) -> Predictions:
        """``batch``: (N, 3, H, W) normalised float, channels_last, on the device."""
        probabilities = self._forward(self._pad(batch))[:rows]
        scores, labels = probabilities.topk(self.topk, dim=1)
        scores, labels = self._to_host(scores), self._to_host(labels).astype(np.int64)
        return Predictions(labels[:, 0].copy(), scores[:, 0].copy(), labels, scores)

    def _pad(self, batch: torch.Tensor) -> torch.Tensor:
        """Pad to the compiled batch size with zero images (the mean colour), so shapes never change."""
        if not self._pad_to or len(batch) >= self._pad_to:
            return batch
        padding = batch.new_zeros((self._pad_to - len(batch), *batch.shape[1:])).contiguous(memory_format=torch.channels_last)
        return torch.cat([batch, padding]).contiguous(memory_format=torch.channels_last)

    def _to_device(self, pixels: np.ndarray | torch.Tensor) -> torch.Tensor:
        batch = pixels if isinstance(pixels, torch.Tensor) else _host_tensor(pixels)
        if batch.device != self.device:
            if self.device.type == "cuda":
                batch = batch.pin_memory()  # no copy when a DataLoader already pinned it
            batch = batch.to(self.device, non_blocking=True)
        return batch  # (N, H, W, 3) uint8

    def _forward(self, batch: torch.Tensor) -> torch.Tensor:
        dtype = AUTOCAST_DTYPES.get(self.precision)
        with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
            logits = self._model(batch)
        return logits.float().softmax(dim=1)

    def _to_host(self, tensor: torch.Tensor) -> np.ndarray:
        if self.device.type != "cuda":
            return tensor.numpy()
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        host.copy_(tensor, non_blocking=True)
        torch.cuda.current_stream(self.device).synchronize()  # this thread's stream only
        return host.numpy()

    def _check_precision(self) -> None:
        if self.precision == "fp16" and self.device.type == "cpu":
            raise ValueError("--precision fp16 needs a GPU; use fp32 or bf16 on CPU")
        if self.precision == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError(f"--precision bf16 is not supported by {torch.cuda.get_device_name(self.device)}; use fp16")


def _check_pixels(pixels: np.ndarray | torch.Tensor) -> None:
    dtype_ok = pixels.dtype == (torch.uint8 if isinstance(pixels, torch.Tensor) else np.uint8)
    if pixels.ndim != 4 or pixels.shape[-1] != 3 or not dtype_ok:
        raise ValueError(f"Predictor expects (N, H, W, 3) uint8 pixels, got {tuple(pixels.shape)} {pixels.dtype}")


def _check_images(images: torch.Tensor, device: torch.device) -> None:
    if images.ndim != 4 or images.shape[1] != 3 or images.dtype != torch.float32:
        raise ValueError(f"predict_images expects (N, 3, H, W) float32 pixels in [0, 255], got {tuple(images.shape)} {images.dtype}")
    if images.device.type != device.type:
        raise ValueError(f"predict_images: images are on {images.device}, the model on {device}; pass predictor(pixels) for host pixels")


def _host_tensor(pixels: np.ndarray) -> torch.Tensor:
    if not pixels.flags.writeable:  # engines hand out read-only views; torch wants to own writable memory
        pixels = pixels.copy()
    return torch.from_numpy(np.ascontiguousarray(pixels))


def _empty(topk: int) -> Predictions:
    return Predictions(
        np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros((0, topk), np.int64), np.zeros((0, topk), np.float32)
    )
