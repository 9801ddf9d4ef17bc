"""``python -m tests.common.standin_gpu_job``: ``runners.ray_job`` on a cluster where a custom Ray resource stands for the GPU.

This machine has no CUDA. A worker node started with ``--resources '{"fake_gpu": 1}'`` plays a
GPU node: the run waits for ``fake_gpu`` as it waits for GPUs, places its predictors on it as on
GPUs (``runners.ray.accelerators``), and computes on that node's CPU. Everything else is the job's.
"""

from __future__ import annotations

import dataclasses
import functools
import sys

from job.driver import commands
from runners.ray.accelerators import Accelerator
from runners.ray_job import ENGINE, start_session

STAND_IN = Accelerator(resource="fake_gpu", device="cpu")

main, cli = commands(dataclasses.replace(ENGINE, start=functools.partial(start_session, accelerator=STAND_IN)))

if __name__ == "__main__":
    sys.exit(cli())
