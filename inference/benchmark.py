"""Model-only throughput: the predictor on a batch already on the device.

Use it to put a pipeline's images/sec next to its ceiling: what the same weights, device,
precision and batch size do when no image has to be read, decoded or copied to the device
(``runners.compare`` reports both). The batch is random uint8 made on the device, the shape
the host sends; it goes through ``Predictor.__call__`` with a tensor already on the device, the path every job's
batches take after their host-to-device copy. Warm-up is not timed; the device is
synchronised before the clock starts and after it stops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from inference.dtypes import Precision
from inference.model import LoadedModel
from inference.predictor import Predictor

# cuDNN autotuning and the first allocations happen in the first calls; keep them out of the figure.
WARMUP_BATCHES = 3
# Labels per image when the caller names none: the top-k sorts a few thousand scores per batch,
# nothing beside the network, so the figure barely depends on it.
TIMED_TOPK = 1


@dataclass(frozen=True)
class ModelOnly:
    images_per_sec: float
    batches: int  # timed batches
    seconds: float  # timed seconds
    device: str
    precision: str
    batch_size: int


def model_only_images_per_sec(
    model: LoadedModel,
    device: torch.device,
    precision: Precision,
    batch_size: int,
    *,
    seconds: float = 5.0,
    min_batches: int = 3,
    compile: bool = False,
    topk: int = TIMED_TOPK,
) -> ModelOnly:
    """Time the predictor for at least ``seconds`` and ``min_batches`` batches of ``batch_size``.

    ``precision`` (and ``topk``, for the exact figure) as the job decided them (``job.execution``).
    """
    if batch_size < 1 or seconds < 0 or min_batches < 1:
        raise ValueError(f"need batch_size >= 1, seconds >= 0, min_batches >= 1; got {batch_size}, {seconds}, {min_batches}")
    predictor = Predictor(model, device, precision, topk, compile=compile, batch_size=batch_size)
    crop = model.recipe.crop
    generator = torch.Generator(device=device).manual_seed(0)
    batch = torch.randint(0, 256, (batch_size, crop, crop, 3), dtype=torch.uint8, device=device, generator=generator)  # (B, H, W, 3)
    for _ in range(WARMUP_BATCHES):
        predictor(batch)
    _synchronize(device)
    started, batches = time.perf_counter(), 0
    while batches < min_batches or time.perf_counter() - started < seconds:
        predictor(batch)  # returns host arrays, so each batch is waited for
        batches += 1
    _synchronize(device)
    elapsed = time.perf_counter() - started
    return ModelOnly(round(batches * batch_size / elapsed, 2), batches, round(elapsed, 3), str(device), predictor.precision, batch_size)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
