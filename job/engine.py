"""The engine contract: the record an engine module exports, what it is given and what it reports.

An engine (``runners/ray_job.py``, ``spark_job.py``, ``sagemaker_job.py``, ``local_job.py``)
declares itself once::

    ENGINE = Engine(name="ray", module="runners.ray_job", description=__doc__.splitlines()[0],
                    capabilities=Capabilities(), add_arguments=add_ray_arguments,
                    start=RaySession.for_args, execute=run_on_ray, packages=("ray",),
                    compare_options=("--address", "local"))
    main, cli = commands(ENGINE)  # job.driver

Everything here is plain data the driver (``job.driver``) reads: its ``--help`` (the shared
options plus the engine's group), the versions its manifest records, how ``runners.compare``
runs it. The engine is given a frozen ``Job`` and returns an ``EngineRun``; it never imports the
driver, and the driver never asks which engine it runs. A fifth engine is one such module and
one line in the table in ``runners/__init__.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from job.cli import examples, get_args_parser
from job.config import JobConfig
from job.execution import Capabilities, Devices, Execution
from job.input.plan import InputPlan
from job.output.parts import Parts


@dataclass(frozen=True)
class Job:
    """What an engine runs: decided before it starts work; it reads this, never rewrites it."""

    config: JobConfig  # as given (with the sample's input and output filled in)
    execution: Execution  # how it computes: decode, batch size, precision, compile, recipe
    pending: InputPlan  # the planned input files without a committed part: what the engine runs
    parts: Parts  # names and commits the part of each input file
    run_id: str


@dataclass
class EngineRun:
    """What an engine reports of its run, beside the parts it committed."""

    settings: dict  # the engine's own facts (actors, master, shards...): the manifest's ``settings``
    progress: list[tuple[float, int]] = field(default_factory=list)  # (wall time, rows done) as rows arrived
    device_seconds: float = 0.0  # time inside the model call, all predictors together
    predictors: int = 1  # model replicas that ran at once (GPU actors, Spark tasks...)


class EngineSession(AbstractContextManager, Protocol):
    """A started engine (a Ray session, a Spark session...): entered while the driver plans the input."""

    def devices(self) -> Devices:
        """What the engine's predictors will run on; asked once, after it started."""


@dataclass(frozen=True)
class Engine:
    name: str  # as the manifest, the engine table and runners.compare name it
    module: str  # ``python -m <module>`` runs its job
    description: str  # the first line of its --help
    capabilities: Capabilities  # what its stages can run; the driver refuses the rest before any work
    add_arguments: Callable[[argparse.ArgumentParser], None]  # adds the engine's own argument group
    start: Callable[[argparse.Namespace], EngineSession]  # the engine, started beside the planning
    execute: Callable[[Job, EngineSession, argparse.Namespace], EngineRun]  # runs job.pending, commits its parts
    packages: tuple[str, ...] = ()  # distributions whose versions the manifest records
    compare_options: tuple[str, ...] = ()  # what runners.compare adds to run it on one machine
    # Refusals of the engine's own (an option it cannot combine with another), before any work.
    check: Callable[[argparse.Namespace, JobConfig], None] | None = None

    def args_parser(self) -> argparse.ArgumentParser:
        """The shared options plus this engine's group."""
        prog = f"python -m {self.module}"
        parser = get_args_parser(prog=prog, description=self.description, epilog=examples(prog))
        self.add_arguments(parser)
        return parser
