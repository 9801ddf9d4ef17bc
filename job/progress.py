"""The one progress display every engine shows: images done of total, images/s, time left.

``job.driver.run_job`` opens it around the engine's work (``showing``); the engine's driver side
calls ``advance(rows)`` as it learns that rows are done, from the same events the timeline uses:
``job.output.parts.PartCollector`` on Ray and local (each block or batch), Spark's task accumulator
(each finished task), SageMaker's shards (each ``.out``). Without a display open (an executor,
a test calling an engine's internals) ``advance`` does nothing.

On a terminal it is one line redrawn in place twice a second, as pip and tqdm draw theirs;
other lines printed meanwhile go above it. When stderr is not a terminal (a log file, CI, a
scheduler) it prints one line every ``LOG_EVERY_SECONDS`` (60 s), and a last one at the end
when it printed any: a night's log shows the job is alive without drowning, and a run shorter
than that prints none (its summary says it all).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

LOG_EVERY_SECONDS = 60.0  # not a terminal: one line this often
REDRAW_SECONDS = 0.5  # a terminal: the live line's refresh
CLEAR_LINE = "\r\033[K"  # back to the line's start, erase it (every terminal pip and tqdm support)

_current: ProgressDisplay | None = None
_current_lock = threading.Lock()


class ProgressDisplay:
    """Counts rows done of ``total`` and draws them (``live``: a terminal's redrawn line; else log lines)."""

    def __init__(self, engine: str, total: int, stream: TextIO, live: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine, self.total, self.stream, self.live, self.clock = engine, total, stream, live, clock
        self.started = clock()
        self.done = 0
        self.first: tuple[float, int] | None = None  # (when, rows done) at the first rows: the rate leaves start-up out
        self.drawn = False  # a live line is on the screen now
        self.logged = 0  # lines printed (not a terminal)
        self.lock = threading.RLock()

    def advance(self, rows: int) -> None:
        self.set_done(self.done + rows)

    def set_done(self, rows: int) -> None:
        """``rows`` are done in all (for engines that learn a running total, as Spark's accumulator)."""
        with self.lock:
            if rows > 0 and self.first is None:
                self.first = (self.clock(), rows)
            self.done = rows

    def text(self) -> str:
        """``ray: 1,200/10,000 images (12%), 340.0 images/s, 0:26 left``, or ``..., starting (12 s)`` before any."""
        now = self.clock()
        with self.lock:
            done, first = self.done, self.first
        head = f"{self.engine}: {done:,}/{self.total:,} images ({done / max(self.total, 1):.0%})"
        if first is None:
            return f"{head}, starting ({now - self.started:.0f} s)"
        rate = (done - first[1]) / (now - first[0]) if now - first[0] >= 1 and done > first[1] else None
        shown = [head] + ([f"{rate:,.1f} images/s"] if rate is not None else [])
        if done >= self.total:
            return ", ".join([*shown, "done"])
        return ", ".join([*shown, f"{clock_text((self.total - done) / rate)} left" if rate else "measuring images/s"])

    def draw(self) -> None:
        with self.lock:
            if self.live:
                self.stream.write(CLEAR_LINE + self.text())
                self.drawn = True
            else:
                self.stream.write(self.text() + "\n")
                self.logged += 1
            self.stream.flush()

    def clear(self) -> None:
        """Take the live line off the screen (before other output; it comes back at the next redraw)."""
        with self.lock:
            if self.drawn:
                self.stream.write(CLEAR_LINE)
                self.drawn = False

    def close(self) -> None:
        """Leave the final count on a terminal (the summary follows it), and in a log that got lines."""
        if self.live or self.logged:
            self.draw()
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


class _Above:
    """sys.stderr while a live line is shown: whatever else writes clears the line first."""

    def __init__(self, display: ProgressDisplay) -> None:
        self.display, self.stream = display, display.stream

    def write(self, text: str) -> int:
        with self.display.lock:
            self.display.clear()
            return self.stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def clock_text(seconds: float) -> str:
    """``0:26``, ``12:05``, ``3:02:10``: time left as watches show it."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@contextmanager
def showing(engine: str, total: int, stream: TextIO | None = None, live: bool | None = None) -> Iterator[ProgressDisplay]:
    """The display of a run of ``total`` rows, open for ``advance`` until the block ends.

    ``live``: a redrawn line (default: whether ``stream``, stderr by default, is a terminal).
    """
    global _current
    stream = stream or sys.stderr
    live = stream.isatty() if live is None else live
    display = ProgressDisplay(engine, total, stream, live)
    stop = threading.Event()
    ticker = threading.Thread(target=_tick, args=(display, stop, REDRAW_SECONDS if live else LOG_EVERY_SECONDS),
                              name="progress", daemon=True)
    saved_stderr = sys.stderr
    with _current_lock:
        _current = display
    if live and stream is saved_stderr:
        sys.stderr = _Above(display)  # type: ignore[assignment]
    ticker.start()
    try:
        yield display
    finally:
        stop.set()
        ticker.join()
        sys.stderr = saved_stderr
        with _current_lock:
            _current = None
        display.close()


def _tick(display: ProgressDisplay, stop: threading.Event, every: float) -> None:
    while not stop.wait(every):
        display.draw()


def advance(rows: int) -> None:
    """``rows`` more are done: counted by the open display, if any (none in executors or tests)."""
    display = _current
    if display is not None and rows:
        display.advance(rows)


def set_done(rows: int) -> None:
    """``rows`` are done in all: for engines that learn a running total."""
    display = _current
    if display is not None:
        display.set_done(rows)
