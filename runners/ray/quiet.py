"""Ray's own lines kept for ``--verbose``: without it a Ray run shows the job's lines and its progress display.

Without ``--verbose`` (``RaySession`` applies each, and undoes what it changed in this process):
- a local Ray this job starts keeps token authentication, Ray 2.60's default, without the
  warning that says so (``RAY_AUTH_MODE=disabled`` would only trade it for a louder one);
- ``ray.init(log_to_driver=False)``: workers' output stays in their log files (a worker's error
  still reaches the driver as the exception it raised);
- Ray Data's progress bars are off (the job's display replaces them) and its INFO lines (about
  eleven every 10 s when stderr is a log) go to its log file only; its warnings still show;
- ``dropping_native_noise``: the driver's core worker writes an ``E ... core_worker.cc`` line when
  Ray Data starts its actor pools (their constructor arguments sit in the object store, and Ray
  Data restarts actors: ray#53727). It reads like an error and is not one; being C++ output on
  fd 2, only a filter on fd 2 can drop it. It drops the lines in ``NATIVE_NOISE``, nothing else.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Ray's logger that announces token authentication when ray.init starts a local Ray.
AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
RAY_DATA_LOGGER = "ray.data"
# Ray Data's remarks on which progress bars it draws (or, with them off, that they are off).
RAY_DATA_PROGRESS_LOGGER = "ray.data._internal.progress"
NATIVE_NOISE = (re.compile(rb"core_worker\.cc:\d+: Actor .*has constructor arguments in the object store and max_restarts > 0"),)
NATIVE_LINE_START = b"["  # how Ray's C++ log lines begin: "[2026-11-24 02:13:40,425 E 21027 21027] core_worker.cc..."


@contextmanager
def quiet_auth_notice() -> Iterator[None]:
    """Around ``ray.init``: Ray turns token authentication on as always, without announcing it."""
    logger = logging.getLogger(AUTH_LOGGER)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class _HideProgressRemarks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(RAY_DATA_PROGRESS_LOGGER)


@contextmanager
def quiet_ray_data() -> Iterator[None]:
    """Ray Data without progress bars, its INFO lines in its log file only, for the block (then as it was)."""
    import ray.data  # configures the "ray.data" logger on import

    context = ray.data.DataContext.get_current()
    bars = context.enable_progress_bars
    consoles = [h for h in logging.getLogger(RAY_DATA_LOGGER).handlers if isinstance(h, logging.StreamHandler)
                and not isinstance(h, logging.FileHandler)]
    levels, hide = [h.level for h in consoles], _HideProgressRemarks()
    context.enable_progress_bars = False
    for handler in consoles:
        handler.setLevel(max(handler.level, logging.WARNING))
        handler.addFilter(hide)
    try:
        yield
    finally:
        context.enable_progress_bars = bars
        for handler, level in zip(consoles, levels):
            handler.setLevel(level)
            handler.removeFilter(hide)


@contextmanager
def dropping_native_noise() -> Iterator[None]:
    """This process's fd 2 through a filter for the block: lines matching ``NATIVE_NOISE`` are dropped.

    Everything else passes at once (a partial line too, unless it may begin one of Ray's native
    lines), so a terminal's live progress line still moves. Child processes started before the
    block keep the real stderr.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved), name="ray-native-stderr", daemon=True)
    forwarder.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last write end in this process closes: the forwarder sees its end
        forwarder.join(timeout=5)
        if not forwarder.is_alive():
            os.close(saved)


def _forward(read_end: int, out: int) -> None:
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            passed = [line + b"\n" for line in lines if not any(p.search(line) for p in NATIVE_NOISE)]
            if pending and not pending.lstrip(b"\r").startswith(NATIVE_LINE_START):
                passed.append(pending)  # a partial line of ours (a live progress line): now, not at its newline
                pending = b""
            _write_all(out, b"".join(passed))
    if pending and not any(p.search(pending) for p in NATIVE_NOISE):
        _write_all(out, pending)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
