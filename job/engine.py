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
class ModelRun:
    """One model of a run and its table: how it computes, where its parts go, which of the run's files it scores."""

    execution: Execution  # its model, recipe, outputs, batch size (the decode, device and precision: the run's)
    parts: Parts  # names and commits the part of each input file, under its table's prefix
    files: frozenset[int] | None = None  # indices into the run's ``pending.files`` it scores; None: every one


@dataclass(frozen=True)
class Job:
    """What an engine runs: decided before it starts work; it reads this, never rewrites it."""

    config: JobConfig  # as given (with the sample's input and output filled in)
    execution: Execution  # how it computes: decode, batch size, precision, compile, recipe (several models: the first's)
    pending: InputPlan  # the planned input files without a committed part: what the engine runs (several: the union)
    parts: Parts  # names and commits the part of each input file (several models: the first's)
    run_id: str
    # --models: every model of the run, each with its table (the first is ``execution`` and ``parts``); each image is
    # read and decoded once, and goes to the models that score its file (job.several). (): one model, the above.
    models: tuple[ModelRun, ...] = ()

    @property
    def runs(self) -> tuple[ModelRun, ...]:
        """Every model of the run, one or several: what the stages and the part collectors are made for."""
        return self.models or (ModelRun(self.execution, self.parts),)

    @property
    def read_rows(self) -> int:
        """Rows a preprocessed batch holds: the model batch (several models: the largest, each model taking its own)."""
        return max(run.execution.batch_size for run in self.runs)


@dataclass
class EngineRun:
    """What an engine reports of its run, beside the parts it committed."""

    settings: dict  # the engine's own facts (actors, master, shards...): the manifest's ``settings``
    progress: list[tuple[float, int]] = field(default_factory=list)  # (wall time, rows done) as rows arrived
    device_seconds: float = 0.0  # time inside the model call, all predictors together
    predictors: int = 1  # model replicas that ran at once (GPU actors, Spark tasks...)
    # Several models (job.several): each model's own (progress, device seconds), in the run's order; the run's decodes
    # (an image decoded once for every model whose recipe could share it) and their seconds, summed over the workers.
    models: list[tuple[list[tuple[float, int]], float]] = field(default_factory=list)
    decodes: int | None = None
    decode_seconds: float | None = None


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
