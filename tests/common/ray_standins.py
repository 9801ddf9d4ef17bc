"""Ray actors for tests of a cluster this machine can only pretend to be.

Ray pickles these by reference: its workers import them from this module.
"""

from __future__ import annotations

import dataclasses
import time

import torch

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


class PredictorThatHangs(RayClassify):
    """``RayClassify`` whose model hangs (sleeps ``HANG_S``) on any batch holding a flat image (one colour throughout).

    A real hang, in the model's forward on the actor's thread, as a kernel that never returns:
    nothing of the stage around it is replaced.
    """

    HANG_S = 600.0  # far past any run, on a starved machine too: a run's time alone shows it did not wait for the hang

    def __init__(self, config: JobConfig, execution: Execution, run_id: str, concurrency: int) -> None:
        super().__init__(config, execution, run_id, concurrency)
        predictor = self.classify.classifiers[0].predictor
        predictor._model = _HangsOnFlatImages(predictor._model, self.HANG_S)


class _HangsOnFlatImages(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, hang_s: float) -> None:
        super().__init__()
        self.model, self.hang_s = model, hang_s

    def forward(self, batch: torch.Tensor):
        pixels = batch.flatten(2)  # (N, C, H*W): flat when every channel holds one value
        if bool((pixels.amax(dim=2) == pixels.amin(dim=2)).all(dim=1).any()):
            time.sleep(self.hang_s)
        return self.model(batch)
