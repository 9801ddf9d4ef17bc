"""Ray actors for tests of a cluster this machine can only pretend to be.

Ray pickles these by reference: its workers import them from this module.
"""

from __future__ import annotations

import dataclasses

from job.config import JobConfig
from job.execution import Execution
from runners.ray_job import RayClassify


class PredictorOnCpu(RayClassify):
    """``RayClassify`` on a node that declares a GPU this machine does not have: the same actor, its model on the CPU.

    The job itself refuses to run a GPU plan where CUDA is not usable; a test of placement
    needs the actor where the GPU is declared, and the model somewhere it can run.
    """

    def __init__(self, config: JobConfig, execution: Execution, run_id: str, concurrency: int) -> None:
        super().__init__(config, dataclasses.replace(execution, device="cpu"), run_id, concurrency)
