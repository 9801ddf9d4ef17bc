"""Workers that Ray's memory monitor kills: after Ray's retries, one line naming memory and the fix.

The monitor is real: a local Ray whose kill threshold is 0.1% of the node's memory kills any task's worker
at once, as a node under memory pressure from other work does, without using the memory.
"""

from __future__ import annotations

import time

import pytest
import ray

from job.errors import JobError
from runners.ray.cluster import RaySession, Scaling

MONITOR = {"RAY_memory_usage_threshold": "0.001", "RAY_memory_monitor_refresh_ms": "50", "RAY_task_oom_retries": "1"}


def _sleep() -> None:
    time.sleep(30)  # long enough for the monitor (every 50 ms) to kill it, and its retry


@pytest.fixture(scope="module")
def memory_killed() -> ray.exceptions.OutOfMemoryError:
    """The error Ray raises for a task its memory monitor killed (once retried), from a Ray of its own."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in MONITOR.items():
            patch.setenv(name, value)  # read by the raylet as it starts, and gone for every later Ray
        ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        with pytest.raises(ray.exceptions.OutOfMemoryError) as raised:
            ray.get(ray.remote(max_retries=1)(_sleep).remote(), timeout=120)
        return raised.value
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
