"""Workers that Ray's memory monitor kills: after Ray's retries, one line naming memory and the fix.

The monitor is real: a local Ray whose kill threshold is 0.1% of the node's memory kills any worker
at once, as a node under memory pressure from other work does, without using the memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import ray

from job.errors import JobError
from runners.ray.cluster import RaySession, Scaling
from tests.common.datasets import write_mixed

MONITOR = {"RAY_memory_usage_threshold": "0.001", "RAY_memory_monitor_refresh_ms": "50", "RAY_task_oom_retries": "1"}
# The whole run on a node that kills every worker takes about 25 s on 2 idle cores (Ray's start, then the
# watch's budget of kills at about 2 a second); 180 s leaves a busy laptop room, and is still "it ends".
RUN_LIMIT_S = 180


@pytest.mark.slow  # a whole run on its own Ray; on a machine already short of memory its end can race Ray's shutdown
def test_a_run_whose_workers_keep_being_killed_for_memory_ends_in_one_line(tmp_path):
    """Ray restarts the pools' actors (a bounded budget) and Ray Data its own helpers (for ever): the run still ends."""
    write_mixed(str(tmp_path / "in"), rows_per_file=9)
    env = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"} | MONITOR
    argv = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", "random", "--batch-size", "8",
            "--address", "local"]  # a Ray of its own, which the monitor's settings reach
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "runners.ray_job", *argv], env=env, capture_output=True, text=True,
                          timeout=RUN_LIMIT_S + 60)
    elapsed = time.monotonic() - started
    last = done.stderr.strip().splitlines()[-1]
    # 4: stopped part-way for a cause outside the data, one line naming the fix (job.cli.run_main); 1 is a traceback.
    assert done.returncode == 4 and last.startswith("error: ray: workers were killed because their node ran low on memory"), \
        done.stderr[-3000:]
    assert "GB used / " in last and "--num-cpu-actors (now " in last and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert elapsed < RUN_LIMIT_S, f"{elapsed:.0f} s"


def _sleep() -> None:
    time.sleep(30)  # long enough for the monitor (every 50 ms) to kill it, and its retry


@pytest.fixture(scope="module")
def memory_killed() -> Iterator[ray.exceptions.OutOfMemoryError]:
    """The error Ray raises for a task its memory monitor killed (once retried), from a Ray of its own."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in MONITOR.items():
            patch.setenv(name, value)  # read by the raylet as it starts, and gone for every later Ray
        ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        with pytest.raises(ray.exceptions.OutOfMemoryError) as raised:
            ray.get(ray.remote(max_retries=1)(_sleep).remote(), timeout=120)
        yield raised.value  # Ray stays up: the run below is inside a session (RaySession.unwrap_errors watches it)
    finally:
        ray.shutdown()


def test_workers_killed_for_memory_are_one_line_naming_memory_and_the_fix(memory_killed):
    scaling = Scaling(gpus=0, classify_actors=1, preprocess_actors=3, preprocess_initial=3, batch_size=64)

    def run():
        raise memory_killed

    with pytest.raises(JobError) as raised:
        RaySession.unwrap_errors(run, scaling)
    line = str(raised.value)
    assert "\n" not in line and line.startswith("ray: workers were killed because their node ran low on memory (")
    assert "GB used / " in line and "--num-cpu-actors (now 3 preprocessing, 1 predictor)" in line
    assert "a smaller --batch-size (now 64)" in line and raised.value.__cause__ is memory_killed


def test_a_killed_worker_is_told_through_what_wraps_it(memory_killed):
    """Ray Data and Ray's task errors wrap the monitor's error: the chain tells, whatever the wrapper."""
    def wrapped():
        try:
            raise memory_killed
        except ray.exceptions.RayError as e:
            raise RuntimeError("the Ray Data executor failed") from e

    with pytest.raises(JobError, match="low on memory"):
        RaySession.unwrap_errors(wrapped)
    with pytest.raises(ValueError, match="not about memory"):  # anything else goes through as it was
        RaySession.unwrap_errors(lambda: (_ for _ in ()).throw(ValueError("not about memory")))

