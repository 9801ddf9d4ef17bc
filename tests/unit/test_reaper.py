"""A killed driver's helpers die with it; a driver that says goodbye, or helpers older than the watchdog, are left alone.

The driver is a real process that starts a ``Reaper``, then a helper with a child of its own
(as Ray's raylet has its agents: they do not die with their parent), and is SIGKILLed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from job.lease.reaper import POLL_S
from benchmarks.harness.processes import still_running

# Prints the pids of its older helper, its watchdog and its new helper; says goodbye when told.
DRIVER = """
import subprocess, sys, time
from job.lease.reaper import Reaper
older = subprocess.Popen(["sleep", "600"])
reaper = Reaper.start()
helper = subprocess.Popen(["sh", "-c", "sleep 600 & exec sleep 600"])  # a helper whose child outlives it
print(older.pid, reaper.watchdog.pid, helper.pid, flush=True)
if sys.stdin.readline() == "goodbye\\n":
    reaper.stop()
    print("stopped", flush=True)
time.sleep(600)
"""
REAPED_WITHIN_S = 10.0


@pytest.fixture
def driver() -> Iterator[tuple[subprocess.Popen, dict[str, psutil.Process]]]:
    """A running driver and its processes: older (started before the reaper), watchdog, helper, helper's child."""
    process = subprocess.Popen([sys.executable, "-c", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    older, watchdog, helper = (psutil.Process(int(pid)) for pid in process.stdout.readline().split())
    while not helper.children():
        time.sleep(0.01)
    processes = {"older": older, "watchdog": watchdog, "helper": helper, "helper's child": helper.children()[0]}
    yield process, processes
    for p in [process.pid, *(p.pid for p in processes.values())]:
        with_ended_ok(os.kill, p, signal.SIGKILL)
    process.wait()


def with_ended_ok(call, *args) -> None:
    try:
        call(*args)
    except ProcessLookupError:
        pass


def test_a_killed_drivers_helpers_die_with_it_and_older_processes_do_not(driver):
    process, processes = driver
    time.sleep(2 * POLL_S)  # the watchdog looks every POLL_S
    process.kill()
    process.wait()
    reaped = {name: p for name, p in processes.items() if name != "older"}
    assert still_running(list(reaped.values()), REAPED_WITHIN_S) == []
    assert processes["older"].status() != psutil.STATUS_ZOMBIE  # started before the watchdog: not its business


def test_a_driver_that_says_goodbye_leaves_its_helpers_to_itself(driver):
    process, processes = driver
    time.sleep(2 * POLL_S)
    process.stdin.write("goodbye\n")
    process.stdin.flush()
    assert process.stdout.readline() == "stopped\n"
    assert still_running([processes["watchdog"]], REAPED_WITHIN_S) == []  # it ended when told
    process.kill()
    process.wait()
    time.sleep(2 * POLL_S)  # a watchdog still there would have reaped by now
    assert all(p.is_running() for name, p in processes.items() if name != "watchdog")
