"""Several Ray jobs in one subprocess that starts one local Ray for them all: ``run_ray_jobs([argv, ...])``.

A test module that runs Spark in its own process must not start Ray there too; each
``python -m runners.ray_job`` subprocess would start (and stop) a Ray of its own, about as long
as a small job. This runs each argv through ``runners.ray_job.main`` in one child process, in
order, on one local Ray, as a scheduler running several nights on one cluster would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence


def run_ray_jobs(argvs: Sequence[Sequence[str]], timeout_s: float = 600) -> None:
    """Run ``runners.ray_job.main(argv)`` for each argv in one subprocess; raise if any job fails."""
    done = subprocess.run([sys.executable, "-m", "tests.common.ray_runs", json.dumps([list(a) for a in argvs])],
                          capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-4000:]


def _main(argvs: list[list[str]]) -> None:
    import ray

    from runners import ray_job

    ray.init(address="local", include_dashboard=False, logging_level="WARNING")
    try:
        for argv in argvs:
            ray_job.main(argv)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]))
