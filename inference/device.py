"""Pick the device a predictor runs on, and name it for the run's plan.

Which precision it runs at is the driver's decision (``job.execution.decide``), made once from
the device's name; nothing here chooses one.
"""

from __future__ import annotations

import torch


def choose_device(gpu_ids: list[int] | None = None) -> torch.device:
    """The CUDA device this worker was given (first of ``gpu_ids``), or CPU when there is none."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    if gpu_ids:
        # Engines that set CUDA_VISIBLE_DEVICES (Ray) renumber from 0; Spark passes real ids.
        index = gpu_ids[0] if gpu_ids[0] < torch.cuda.device_count() else 0
        return torch.device("cuda", index)
    return torch.device("cuda", 0)


def device_name(device: torch.device) -> str | None:
    """The GPU's name (e.g. "NVIDIA H100 80GB HBM3") for the run's plan; None for the CPU."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None
