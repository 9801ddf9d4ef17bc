"""Memory a step freed, given back to the system before the next step: the driver's peak, not its leftovers.

The driver's last step on a million files follows the engine's run and reads a million parts on
threads; the memory they freed stays with the allocators that served it (Arrow's pool, and glibc's
arenas, one per thread) and counts in the process's resident set while the next step allocates
its own. ``release_freed_memory`` hands it back: Arrow's ``MemoryPool.release_unused`` and glibc's
``malloc_trim`` (where the C library is glibc: Linux; elsewhere only Arrow's). It frees nothing in use.
Measured by ``python -m benchmarks.finish_bench`` (the resident set when the last step starts and at
most while it runs).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import pyarrow as pa


def release_freed_memory() -> None:
    """Give the memory freed so far back to the system: Arrow's pool, then the C library's heap."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)  # 0: keep no padding at the top of the heap


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    return getattr(ctypes.CDLL(name), "malloc_trim", None)
