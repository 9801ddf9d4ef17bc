"""The batch predictor: uint8 NHWC pixels in; top-k labels and probabilities, and/or embeddings, out.

One ``Predictor`` per worker (Ray actor, Spark Python worker, SageMaker model server); the
model is loaded once and reused for every batch. The host sends uint8 (4x fewer bytes than
float32); conversion and the recipe's normalisation (and, for a model that takes B, G, R, the channel
flip) run on the device.

The precision and top-k come decided (``job.execution.decide``, once per run): the predictor
refuses a precision its device cannot run, and chooses none. What comes back:
``predictions=True`` (the default) fills label, score, topk_labels and topk_scores, scored as the
model's description says (``inference.scores``: softmax, sigmoid for a one-logit head, each class's
sigmoid for a multi-label head);
``embeddings="float16"|"float32"`` fills ``embeddings`` with the pooled feature (the final
Linear's input: ResNet50's 2048-d average pool), cast on the device before it is copied back.
Either or both, from one forward pass.

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
from inference.dtypes import EMBEDDING_DTYPES, PRECISIONS, EmbeddingDtype, Precision
from inference.features import FeaturesAndLogits
from inference.model import LoadedModel
from inference.scores import top_classes

AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}  # fp32: no autocast
_TORCH_DTYPES = {"float16": torch.float16, "float32": torch.float32}


@dataclass
class Predictions:
    label: np.ndarray | None  # (N,) int64: top-1 class index; None: predictions not asked for
    score: np.ndarray | None  # (N,) float32: its probability (softmax; a one-logit head's sigmoid p or 1 - p)
    topk_labels: np.ndarray | None  # (N, k) int64
    topk_scores: np.ndarray | None  # (N, k) float32
    embeddings: np.ndarray | None = None  # (N, D) float16 or float32: the pooled feature; None: not asked for


class Predictor:
    """The model on one device, in inference mode, channels_last, with optional autocast."""

    def __init__(
        self,
        model: LoadedModel,
        device: torch.device,
        precision: Precision,
        topk: int,
        *,
        predictions: bool = True,
        embeddings: EmbeddingDtype | None = None,
        compile: bool = False,
        batch_size: int | None = None,
        compile_mode: str = DEFAULT_COMPILE_MODE,
    ) -> None:
        self.device = device
        self.precision = precision
        self.topk = topk if predictions else 0
        self.activation = model.spec.activation
        self.embeddings = embeddings
        self.embedding_dim = model.spec.embedding_dim
        self._check_precision()
        _check_outputs(predictions, embeddings, topk, model.spec.num_classes)
        if compile and not batch_size:
            raise ValueError("Predictor(compile=True) needs batch_size: batches are padded to it so the model compiles once")
        self._pad_to = batch_size if compile else None
        outputs = FeaturesAndLogits(model.module.eval(), model.head, predictions)
        module = outputs.to(device, memory_format=torch.channels_last)
        self._model = compile_model(module, compile_mode) if compile else module
        # Scaled by 255 so uint8 pixels normalise in one fused sub/div: (x - 255*mean) / (255*std).
        self._mean = torch.tensor(model.recipe.mean, device=device).view(1, 3, 1, 1) * 255
        self._std = torch.tensor(model.recipe.std, device=device).view(1, 3, 1, 1) * 255
        self._bgr = model.recipe.channel_order == "bgr"  # the model takes B, G, R: flipped after normalising
        self._streams = threading.local()  # one CUDA stream per calling thread
        if compile:
            crop = model.recipe.crop
            self(np.zeros((batch_size, crop, crop, 3), np.uint8))  # compile now, not in the first batch

    @torch.inference_mode()
    def __call__(self, pixels: np.ndarray | torch.Tensor) -> Predictions:
        """Classify ``pixels``: (N, H, W, 3) uint8, in host memory or already on the device."""
        _check_pixels(pixels)
        if len(pixels) == 0:
            return self._empty()
        with self.stream():
            batch = self._to_device(pixels).permute(0, 3, 1, 2).float()  # (N, 3, H, W) view of NHWC: channels_last
            return self._predict(self._ordered(batch.sub_(self._mean).div_(self._std)), len(pixels))

    @torch.inference_mode()
    def predict_images(self, images: torch.Tensor) -> Predictions:
        """Classify ``images``: (N, 3, H, W) float32 pixels in [0, 255], on this predictor's device.

        Made on another stream than ``self.stream()``? This stream waits for the caller's, and the
        tensor is marked used here so the caller's allocator cannot hand its memory out early.
        """
        _check_images(images, self.device)
        if len(images) == 0:
            return self._empty()
        with self.stream(images):
            normalised = torch.empty_like(images, memory_format=torch.channels_last)  # (N, 3, H, W)
            torch.sub(images, self._mean, out=normalised)
            return self._predict(self._ordered(normalised.div_(self._std)), len(images))

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
        features, logits = self._forward(self._pad(batch))
        wanted = []  # device tensors to copy back, in one wait
        if logits is not None:
            wanted += top_classes(logits[:rows], self.topk, self.activation)  # scores, labels: (N, k) each
        if self.embeddings is not None:
            wanted.append(features[:rows].to(_TORCH_DTYPES[self.embeddings]))  # (N, D)
        host = self._to_host(wanted)
        embeddings = host.pop() if self.embeddings is not None else None
        if logits is None:
            return Predictions(None, None, None, None, embeddings)
        scores, labels = host[0], host[1].astype(np.int64)
        return Predictions(labels[:, 0].copy(), scores[:, 0].copy(), labels, scores, embeddings)

    def _ordered(self, batch: torch.Tensor) -> torch.Tensor:
        """``batch`` (N, 3, H, W) in the recipe's channel order: as it is (RGB), or flipped to B, G, R."""
        return batch.flip(1).contiguous(memory_format=torch.channels_last) if self._bgr else batch

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

    def _forward(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(features (N, D), the head's logits (N, logits) or None when predictions are off)."""
        dtype = AUTOCAST_DTYPES.get(self.precision)
        with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
            return self._model(batch)

    def _to_host(self, tensors: list[torch.Tensor]) -> list[np.ndarray]:
        """Copy ``tensors`` back; on CUDA through pinned memory, waiting once for this thread's stream."""
        if self.device.type != "cuda":
            return [tensor.numpy() for tensor in tensors]
        hosts = [torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True) for tensor in tensors]
        for host, tensor in zip(hosts, tensors):
            host.copy_(tensor, non_blocking=True)
        torch.cuda.current_stream(self.device).synchronize()  # this thread's stream only
        return [host.numpy() for host in hosts]

    def _empty(self) -> Predictions:
        embeddings = None if self.embeddings is None else np.zeros((0, self.embedding_dim), self.embeddings)
        if not self.topk:
            return Predictions(None, None, None, None, embeddings)
        k = self.topk
        return Predictions(np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros((0, k), np.int64),
                           np.zeros((0, k), np.float32), embeddings)

    def _check_precision(self) -> None:
        """Refuse what this device cannot run; which precision to run is the driver's decision, not made here."""
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision {self.precision!r}: choose one of {', '.join(PRECISIONS)}")
        if self.precision == "fp16" and self.device.type == "cpu":
            raise ValueError("--precision fp16 needs a GPU; use fp32 or bf16 on CPU")
        if self.precision == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError(f"--precision bf16 is not supported by {torch.cuda.get_device_name(self.device)}; use fp16")


def _check_outputs(predictions: bool, embeddings: str | None, topk: int, num_classes: int) -> None:
    if embeddings is not None and embeddings not in EMBEDDING_DTYPES:
        raise ValueError(f"embeddings={embeddings!r}: choose one of {', '.join(EMBEDDING_DTYPES)}, or None for none")
    if not predictions and embeddings is None:
        raise ValueError("the Predictor has nothing to return: ask for predictions, embeddings, or both")
    if predictions and not 1 <= topk <= num_classes:
        raise ValueError(f"top-k {topk} does not fit a model with {num_classes} classes: choose 1 to {num_classes}")


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
