"""``python -m tests.common.standin_gpu_job``: ``runners.ray_job`` on a cluster where a custom Ray resource stands for the GPU.

This machine has no CUDA. A worker node started with ``--resources '{"fake_gpu": 1}'`` plays a
GPU node: the run waits for ``fake_gpu`` as it waits for GPUs, places its predictors on it as on
GPUs (``runners.ray.accelerators``), and computes on that node's CPU. Everything else is the job's.

``STANDIN_SLOW_DECODERS=1`` in the driver's environment: each decoder first waits
``SlowDecoder.DELAY_S`` per input file (``SlowDecoder``), so a test can stop a node while both
stages still work, without loading a 2-core machine with real decoding.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from job.driver import commands
from runners.ray.accelerators import Accelerator
from runners.ray_job import ENGINE, RayPreprocess, run_on_ray, start_session

STAND_IN = Accelerator(resource="fake_gpu", device="cpu")


class SlowDecoder(RayPreprocess):
    """``RayPreprocess`` that sleeps ``DELAY_S`` before each input file: decoding that lasts, at no CPU cost."""

    DELAY_S = 1.0

    def __call__(self, batch: dict[str, np.ndarray]) -> Iterator[pa.Table]:
        time.sleep(self.DELAY_S)
        yield from super().__call__(batch)


execute = functools.partial(run_on_ray, preprocess=SlowDecoder) if os.environ.get("STANDIN_SLOW_DECODERS") else run_on_ray
main, cli = commands(dataclasses.replace(ENGINE, start=functools.partial(start_session, accelerator=STAND_IN),
                                         execute=execute))

if __name__ == "__main__":
    sys.exit(cli())
