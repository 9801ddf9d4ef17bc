"""Kill one of this test's own engine worker processes mid-run (a Ray actor, a Spark Python worker).

Only descendants of the test process are looked at, so jobs that other people run on the
same machine are never touched. Ray and Spark started by a test are its descendants: Ray's
raylet forks the actor processes, Spark's JVM forks ``pyspark.daemon``, which forks workers.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import psutil


def command_line(process: psutil.Process) -> str:
    """The process title (Ray actors rewrite theirs to ``ray::<actor>.<method running>``)."""
    return " ".join(process.cmdline()).strip()


def ray_data_actor(process: psutil.Process) -> bool:
    """A Ray Data map actor of any job (its title names its operator)."""
    return "MapBatches(" in command_line(process)


def ray_actor_working(actor_class: str) -> Callable[[psutil.Process], bool]:
    """Matches a Ray Data actor of ``actor_class`` while it runs a batch (not while it starts)."""
    return lambda process: f"MapBatches({actor_class})).submit" in command_line(process)


def busy_pyspark_worker(cpu_s: float = 1.0, window_s: float = 0.5,
                        busy_share: float = 0.5) -> Callable[[psutil.Process], bool]:
    """Matches a Python worker forked by ``pyspark.daemon`` that is running a task: it used
    ``cpu_s`` of CPU since first seen and ``busy_share`` of the last ``window_s`` (an idle
    worker, kept for reuse between tasks, uses none; a busy one on a loaded machine shares
    its cores with everything else)."""
    first: dict[int, float] = {}  # pid -> CPU seconds when first seen
    window: dict[int, tuple[float, float]] = {}  # pid -> (clock, CPU seconds) at the window's start

    def match(process: psutil.Process) -> bool:
        parent = process.parent()
        if parent is None or "pyspark.daemon" not in command_line(process) or "pyspark.daemon" not in command_line(parent):
            return False
        now, used = time.monotonic(), sum(process.cpu_times()[:2])  # user + system
        started, (since, used_then) = first.setdefault(process.pid, used), window.setdefault(process.pid, (now, used))
        if now - since < window_s:
            return False
        window[process.pid] = (now, used)
        return used - started >= cpu_s and (used - used_then) >= busy_share * (now - since)

    return match


class KillFirst(threading.Thread):
    """``with KillFirst(match) as killer: run the job``; SIGKILLs the first descendant ``match`` accepts.

    ``spare(process)`` spares processes that already exist when it starts: an earlier job's
    Ray actors can outlive it (a failed job's, still in a task). ``killer.killed`` holds the
    command line of the process it killed (empty if none matched).
    """

    def __init__(self, match: Callable[[psutil.Process], bool], spare: Callable[[psutil.Process], bool] | None = None,
                 poll_s: float = 0.005, relist_s: float = 0.2) -> None:
        super().__init__(name="kill-first", daemon=True)
        # Listing the process tree is slow (all of /proc); looking at known processes is fast,
        # so a short task is caught within milliseconds of starting.
        self.match, self.poll_s, self.relist_s = match, poll_s, relist_s
        self.killed: list[str] = []
        self._done = threading.Event()
        self._spared = {p.pid for p in psutil.Process().children(recursive=True) if spare and _safely(spare, p)}

    def run(self) -> None:
        me, processes, listed = psutil.Process(), [], 0.0
        while not self._done.is_set():
            if time.monotonic() - listed >= self.relist_s:
                processes = [p for p in me.children(recursive=True) if p.pid not in self._spared]
                listed = time.monotonic()
            for process in processes:
                try:
                    if self.match(process):
                        title = command_line(process)
                        os.kill(process.pid, signal.SIGKILL)
                        self.killed.append(title)
                        return
                except psutil.Error:
                    continue  # it ended while we looked at it
            self._done.wait(self.poll_s)

    def __enter__(self) -> KillFirst:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self.join()


def still_running(processes: list[psutil.Process], timeout_s: float) -> list[str]:
    """Wait up to ``timeout_s`` for ``processes`` to end; the command lines of those still running then.

    A zombie has ended: it waits only for its parent (init, for orphans) to collect its status.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        running = [p for p in processes if _safely(lambda q: q.status() != psutil.STATUS_ZOMBIE, p)]
        if not running or time.monotonic() >= deadline:
            return [_safely(command_line, p) or str(p.pid) for p in running]
        time.sleep(0.1)


def _safely(check: Callable[[psutil.Process], bool], process: psutil.Process) -> bool:
    try:
        return check(process)
    except psutil.Error:
        return False  # it ended while we looked at it
