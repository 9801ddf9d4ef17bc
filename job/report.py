"""What a finished job records of where it ran: the library versions and the hardware its manifest holds."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys


CORE_PACKAGES = ("numpy", "pyarrow", "pillow", "torch", "torchvision")


def versions(*extra_packages: str) -> dict[str, str]:
    """Installed versions of the core packages and the engine's own."""
    found = {"python": platform.python_version()}
    for name in (*CORE_PACKAGES, *extra_packages):
        found[name] = _version(name)
    return found


def _version(package: str) -> str:
    """The package's pip version; else its module's ``__version__`` (Databricks' own pyspark has no pip metadata)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        module = importlib.import_module(package)
    except ImportError:
        return "not installed"
    return str(getattr(module, "__version__", "unknown"))


def hardware() -> dict:
    """This machine: CPU model and count, memory, GPUs."""
    return {
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "gpus": _gpus(),
    }


def _gpus() -> list[str]:
    """The GPUs' names. A driver that never loaded torch (Ray's, Spark's) asks nvidia-smi rather than import
    torch only for this (about 1 s and 450 MB); none (no NVIDIA driver): no GPUs."""
    torch = sys.modules.get("torch")
    if torch is not None:  # the local engine computes in this process: torch knows, within CUDA_VISIBLE_DEVICES
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    if shutil.which("nvidia-smi") is None:
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    only = ["--id=" + visible] if visible else []
    done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", *only],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:  # said in the manifest, not taken for "no GPU"
        return [f"unknown: nvidia-smi failed ({(done.stderr or done.stdout).strip().splitlines()[:1]})"]
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass  # not Linux: platform.processor() is the best there is
    return platform.processor() or "unknown"
