"""What a finished job tells: the versions and hardware its manifest records, and the closing summary."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from typing import TextIO

from job.manifest import Manifest, Timeline

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


def print_summary(manifest: Manifest, stream: TextIO | None = None) -> None:
    """The closing lines: images, errors, seconds, images/sec, the timeline, where the output is."""
    stream = stream or sys.stdout
    counts, rate, files = manifest.counts, manifest.images_per_sec, manifest.input_files
    timing = f"in {manifest.seconds:.1f} s = {rate:.1f} images/s" if rate is not None else "(nothing left to run)"
    if files.resumed:
        timing = f"after resuming {files.resumed} of {files.total} files: ran {files.rows_run} images {timing}"
    print(f"{manifest.engine}: {counts.rows_out} images ({counts.predicted} predicted, {counts.errored} errors) {timing}",
          file=stream)
    if rate is not None:
        print(f"  timeline: {timeline_text(manifest.timeline)}", file=stream)
    for example in manifest.error_examples:
        print(f"  error row {example['id']}: {example['error']}", file=stream)
    print(f"output: {manifest.output} (manifest: {manifest.manifest})", file=stream)


def timeline_text(timeline: Timeline) -> str:
    """``command 21.3 s, startup 9.1 s, steady 3400.0 images/s, device busy 87%``; "n/a" for what was not seen.

    The command's whole time comes first: the summary's "in N s" is the engine's work alone, and
    ``startup`` (from the command to the first model batch) can exceed it on a small input.
    """
    startup = f"{timeline.startup_seconds:.1f} s" if timeline.startup_seconds is not None else "n/a"
    steady = f"{timeline.steady_images_per_sec:.1f} images/s" if timeline.steady_images_per_sec is not None else "n/a"
    busy = f"{timeline.device_busy_fraction:.0%}" if timeline.device_busy_fraction is not None else "n/a"
    return f"command {timeline.wall_seconds:.1f} s, startup {startup}, steady {steady}, device busy {busy}"
