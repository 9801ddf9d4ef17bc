"""Whether a model fits in this machine's memory, asked before it is loaded: ``require_fits``. Torch-free.

A model too large for the machine otherwise ends in a long traceback (``can't allocate memory`` under a cap) or, with
no cap, in the kernel's OOM killer and no line at all. Each source counts its parameters without loading them
(safetensors headers, a network built on the meta device) and asks here first. The memory there is the least of:
what the kernel says is available (``MemAvailable``), what this process's cgroup leaves (v2 ``memory.max`` less
``memory.current``; v1 ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``), and what its address-space limit
leaves (``RLIMIT_AS``, as ``ulimit -v`` sets it, less what the process maps already).
"""

from __future__ import annotations

import os
import resource

from inference.errors import WeightsError

FLOAT32 = 4  # bytes a parameter takes: every source loads in fp32
# The weights, and half again: what loading holds beside them (a state dict read before it is copied in, the
# driver's probe of two images). An estimate, stated: a model within it may still not fit a busy machine.
LOAD_MARGIN = 1.5
NO_LIMIT = 1 << 60  # a cgroup "limit" at or above this is none (v1 writes 2^63 rounded down to a page)
GIB = 1 << 30


def require_fits(parameters: int, shown: str, proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> None:
    """WeightsError naming the size and the memory there is when ``parameters`` in fp32 (with LOAD_MARGIN) do not fit."""
    need = int(parameters * FLOAT32 * LOAD_MARGIN)
    there = available_memory(proc, cgroup)
    if there is None or need <= there[0]:
        return
    raise WeightsError(f"{shown}: its {_count(parameters)} parameters need about {need / GIB:.1f} GiB to load (float32, "
                       f"{LOAD_MARGIN:g}x the weights), and this machine has {there[0] / GIB:.1f} GiB available "
                       f"({there[1]}); run it where there is more memory")


def available_memory(proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> tuple[int, str] | None:
    """(bytes available to this process, which limit says so), the least of the three; None where none can be read."""
    found = [(value, what) for value, what in (_meminfo(proc), _cgroup(proc, cgroup), _address_space(proc))
             if value is not None]
    return min(found) if found else None


def _meminfo(proc: str) -> tuple[int | None, str]:
    for line in _lines(os.path.join(proc, "meminfo")):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, "MemAvailable"
    return None, ""


def _cgroup(proc: str, cgroup: str) -> tuple[int | None, str]:
    """What this process's memory cgroup leaves: its own folder (from /proc/self/cgroup), else the mount's root."""
    for line in _lines(os.path.join(proc, "self", "cgroup")):
        number, controllers, path = line.strip().split(":", 2)
        v2 = number == "0" and controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        root = cgroup if v2 else os.path.join(cgroup, "memory")
        limit, usage = ("memory.max", "memory.current") if v2 else ("memory.limit_in_bytes", "memory.usage_in_bytes")
        for folder in (os.path.join(root, path.lstrip("/")), root):
            left = _left(os.path.join(folder, limit), os.path.join(folder, usage))
            if left is not None:
                return left, f"cgroup {os.path.join(folder, limit)}"
    return None, ""


def _left(limit_path: str, usage_path: str) -> int | None:
    limit, usage = _number(limit_path), _number(usage_path)
    if limit is None or limit >= NO_LIMIT or usage is None:
        return None
    return max(limit - usage, 0)


def _address_space(proc: str) -> tuple[int | None, str]:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None, ""
    mapped = next((int(line.split()[1]) * 1024 for line in _lines(os.path.join(proc, "self", "status"))
                   if line.startswith("VmSize:")), 0)
    return max(soft - mapped, 0), "the address-space limit (ulimit -v)"


def _number(path: str) -> int | None:
    text = "".join(_lines(path)).strip()
    return int(text) if text.isdigit() else None  # "max": cgroup v2's no limit


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readlines()
    except OSError:  # not Linux, or no such controller here: that limit is not read
        return []


def _count(parameters: int) -> str:
    """6.4 billion, 86.6 million, 5,000."""
    for size, word in ((1e9, "billion"), (1e6, "million")):
        if parameters >= size:
            return f"{parameters / size:.1f} {word}"
    return f"{parameters:,}"
