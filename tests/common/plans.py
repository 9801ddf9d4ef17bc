"""The run's plan (``job.execution.Execution``) as the driver decides it, for tests that call the stages directly."""

from __future__ import annotations

from collections.abc import Callable

from job.config import JobConfig
from job.engine import Engine
from job.execution import Capabilities, Devices, Execution, decide, model_for

CPU = Devices("cpu")


def cpu_execution(config: JobConfig, images: int = 0) -> Execution:
    """What the driver decides for ``config`` (its model described as the driver does) when the predictors run on the CPU."""
    return decide(config, Capabilities(), CPU, images, model=model_for(config))


class CpuOnly:
    """An engine session with nothing to start, whose predictors run on the CPU."""

    def __enter__(self) -> CpuOnly:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def devices(self) -> Devices:
        return CPU


def engine_running(execute: Callable, start: Callable | None = None) -> Engine:
    """An engine record around ``execute(job, session, args)``, for driver tests without a real engine."""
    return Engine(name="test", module="tests.common.plans", description="a test engine", capabilities=Capabilities(),
                  add_arguments=lambda parser: None, start=start or (lambda args: CpuOnly()), execute=execute)
