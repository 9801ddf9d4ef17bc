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


def ray_actor_working(actor_class: str) -> Callable[[psutil.Process], bool]:
    """Matches a Ray Data actor of ``actor_class`` while it runs a batch (not while it starts)."""
    return lambda process: f"MapBatches({actor_class})).submit" in command_line(process)


def busy_pyspark_worker(cpu_s: float = 1.0) -> Callable[[psutil.Process], bool]:
    """Matches a Python worker forked by ``pyspark.daemon`` once it has used ``cpu_s`` of CPU
    since first seen: it is running a task, not idling in Spark's pool of reused workers."""
    first_seen: dict[int, float] = {}

    def match(process: psutil.Process) -> bool:
        parent = process.parent()
        if parent is None or "pyspark.daemon" not in command_line(process) or "pyspark.daemon" not in command_line(parent):
            return False
        used = sum(process.cpu_times()[:2])  # user + system seconds
        return used - first_seen.setdefault(process.pid, used) >= cpu_s

    return match


class KillFirst(threading.Thread):
    """``with KillFirst(match) as killer: run the job``; SIGKILLs the first descendant ``match`` accepts.

    ``killer.killed`` holds the command line of the process it killed (empty if none matched).
    """

    def __init__(self, match: Callable[[psutil.Process], bool], poll_s: float = 0.005, relist_s: float = 0.2) -> None:
        super().__init__(name="kill-first", daemon=True)
        # Listing the process tree is slow (all of /proc); looking at known processes is fast,
        # so a short task is caught within milliseconds of starting.
        self.match, self.poll_s, self.relist_s = match, poll_s, relist_s
        self.killed: list[str] = []
        self._done = threading.Event()

    def run(self) -> None:
        me, processes, listed = psutil.Process(), [], 0.0
        while not self._done.is_set():
            if time.monotonic() - listed >= self.relist_s:
                processes, listed = me.children(recursive=True), time.monotonic()
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
