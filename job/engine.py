"""The engine contract: the one record an engine module exports, and the command built from it.

An engine (``runners/ray_job.py``, ``spark_job.py``, ``sagemaker_job.py``, ``local_job.py``)
declares itself once::

    ENGINE = Engine(name="ray", module="runners.ray_job", description=__doc__.splitlines()[0],
                    capabilities=Capabilities(), add_arguments=add_ray_arguments,
                    start=RaySession.for_args, execute=run_on_ray, packages=("ray",),
                    compare_options=("--address", "local"))
    main, cli = ENGINE.main, ENGINE.cli

and everything else follows from the record: its ``--help`` (the shared options plus its own
group), its ``main`` (``job.driver.run_job``: plan while the engine starts, decide the run's
``Execution`` from the engine's capabilities and devices, execute, verify, manifest), its
``cli`` (one line and exit code 2 for what the user can fix), the versions its manifest records,
and how ``runners.compare`` runs it. A fifth engine is one such module and one line in the
table in ``runners/__init__.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from job.cli import RESUME_HINT, config_from_args, get_args_parser, run_main
from job.config import JobConfig
from job.driver import EngineRun, Job, run_job
from job.execution import Capabilities, Devices, require_capable
from job.timeline import COMMAND_STARTED_AT


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
        parser = get_args_parser(prog=f"python -m {self.module}", description=self.description)
        self.add_arguments(parser)
        return parser

    def main(self, argv: Sequence[str] | None = None, *, started_at: float | None = None) -> dict:
        """Run the job; returns the manifest. Raises JobError (and kin) for what the user can fix.

        ``started_at``: when the command started, for the timeline's start-up (None: now, as for
        a call from a notebook or a test).
        """
        args = self.args_parser().parse_args(argv)
        config = config_from_args(args)
        require_capable(config.decode, self.capabilities, self.name)  # before any planning
        if self.check is not None:
            self.check(args, config)
        return run_job(self, config, args, started_at)

    def cli(self) -> int:
        """The command: ``main`` with user-fixable errors as one line and exit code 2.

        Its start-up counts its imports: the clock starts at the interpreter's first import of our code.
        """
        return run_main(lambda argv: self.main(argv, started_at=COMMAND_STARTED_AT), interrupted_hint=RESUME_HINT)
