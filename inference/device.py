"""Pick the device and the precision a predictor runs at."""

from __future__ import annotations

import torch

from inference.names import PRECISIONS, Precision  # noqa: F401 - re-exported: the precisions live with the device choice
AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def choose_device(gpu_ids: list[int] | None = None) -> torch.device:
    """The CUDA device this worker was given (first of ``gpu_ids``), or CPU when there is none."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    if gpu_ids:
        # Engines that set CUDA_VISIBLE_DEVICES (Ray) renumber from 0; Spark passes real ids.
        index = gpu_ids[0] if gpu_ids[0] < torch.cuda.device_count() else 0
        return torch.device("cuda", index)
    return torch.device("cuda", 0)


def default_precision(device: torch.device) -> Precision:
    """bf16 on GPUs that have it (Ampere+), fp16 on older GPUs, fp32 on CPU."""
    if device.type != "cuda":
        return "fp32"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def device_name(device: torch.device) -> str | None:
    """The GPU's name (e.g. "NVIDIA H100 80GB HBM3") for the run's plan; None for the CPU."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None
