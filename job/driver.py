"""The one ``main`` every engine runs: prepare, plan the night, let the engine work, verify, write the manifest.

An engine module builds its command with ``main, cli = commands(ENGINE)``. ``run_job`` prepares
in a thread while the engine starts in this one (``engine.start``: a Ray session, a Spark
session), so start-up is the two side by side; a run with nothing for the engine to do (a night
with nothing new, a stopped night whose parts were all written) starts no engine:

- ``job.prepare.prepare_job`` does everything that can fail before any work, and finds what the
  output holds (``job.night.held``).
- ``decide_job`` (``job.steps``, the steps every run takes) then fixes how the run computes, once, from the config, the described model,
  the engine's capabilities and the devices the started engine reports (``job.execution``: the
  ``Execution`` carries the model to every worker), and what the night does with the output, once,
  from the options that shape the rows (``job.night.planning.plan_night``: keep, adopt, score, re-score,
  remove; a continued table's plan is made first for the devices it was made on, and is the plan when
  the engine's give the same options). The engine gets a frozen ``Job`` (``job.engine``): it reads it,
  never rewrites it, runs ``job.pending`` and commits one part per input file through ``job.output.parts``.
- ``job.night.finish.finish_job`` reads the plan: verifies the table, commits it, writes its ids index
  and the manifest last.
The lease is renewed from prepare to the manifest and released after, whatever happened; a
crashed process's lease stops being renewed and expires.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from job import prepare
from job.cli import RESUME_HINT, configs_from_args, run_main
from job.config import JobConfig
from job.engine import Engine, Job
from job.costs.forecast import forecast_night
from job.execution import Devices, model_for, require_capable, this_machine
from job.night import formats
from job.night.begin import check_night
from job.night.dry_run import print_report as print_dry_run, report as dry_run_report
from job.night.finish import Ran, finish_job
from job.night.plan import NightPlan
from job.night.summary import print_summary
from job.several.run import run_several
from job.steps import (begin, decide_job, execute, on_the_tables_devices, require_table_allows, stopped_part_way,
                       without_engine)
from job.timeline import COMMAND_STARTED_AT


def commands(engine: Engine) -> tuple[Callable[..., dict], Callable[[], int]]:
    """The engine's ``main(argv=None)`` (returns the manifest; raises for what the user can fix) and its ``cli()``."""
    return (lambda argv=None, started_at=None: main(engine, argv, started_at=started_at)), (lambda: cli(engine))


def main(engine: Engine, argv: Sequence[str] | None = None, *, started_at: float | None = None) -> dict:
    """Run the job on ``engine``; returns the manifest. Raises JobError (and kin) for what the user can fix.

    ``started_at``: when the command started, for the timeline's start-up (None: now, as for
    a call from a notebook or a test).
    """
    args = engine.args_parser().parse_args(argv)
    configs = configs_from_args(args)
    for config in configs:
        require_capable(config.decode, engine.capabilities, engine.name)  # before any planning
        formats.require_installed(config.table_format, config.iceberg_catalog)
        if engine.check is not None:
            engine.check(args, config)
    if args.models is None:
        return run_job(engine, configs[0], args, started_at)
    if configs[0].dry_run:  # each model's table, its own plan and estimate
        return {"models": [dry_run(engine, config) for config in configs]}
    return run_several(engine, configs, args, time.time() if started_at is None else started_at)


def cli(engine: Engine) -> int:
    """The command: ``main`` with user-fixable errors as one line and exit code 2.

    Its start-up counts its imports: the clock starts at the interpreter's first import of our code.
    """
    return run_main(lambda argv: main(engine, argv, started_at=COMMAND_STARTED_AT), interrupted_hint=RESUME_HINT)


def run_job(engine: Engine, config: JobConfig, args: argparse.Namespace, started_at: float | None = None) -> dict:
    """Prepare, plan the night, run ``engine.execute`` on the pending files (if any), finish; prints the summary,
    returns the manifest.

    ``started_at``: when the command started (the timeline's start-up counts from it); None: now.
    The output's lease, taken while preparing, is released once the manifest is written, or
    when anything fails (the engine's start included).
    """
    started_at = time.time() if started_at is None else started_at
    if config.dry_run:
        return dry_run(engine, config)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prepare") as pool:
        # The model (weights read, names, recipe) is described while the input is listed and planned.
        describing = pool.submit(model_for, config)
        preparing = pool.submit(prepare.prepare_job, config, describing.result)
        with _released_at_the_end(preparing):
            # A run that continues a table plans first on the devices its table was made on: a night with nothing to
            # run starts no engine. A first run starts its engine while it prepares.
            guess = _on_the_tables_devices(preparing, engine) if config.resume or config.incremental else None
            if guess is not None and (guess[1].done or not guess[1].pending.files):
                return without_engine(preparing.result(), *guess, engine, started_at)
            with engine.start(args) as session:
                prepared = preparing.result()
                job, night = decide_job(prepared, engine, session.devices(), guess[1] if guess else None)
                begin(prepared, job, night)
                with stopped_part_way():
                    run, seconds = execute(engine, job, session, args)
            with stopped_part_way():
                manifest = finish_job(night, job, Ran(engine, run, seconds, started_at), prepared.held, prepared.lease)
    print_summary(manifest)
    # The plan and the engine's records go before the manifest's dict is made in their memory: a million files' plan is
    # about 700 MB of the driver, and their table's entries as dicts another 330.
    del prepared, job, night, run, preparing, guess
    return manifest.to_dict()


def dry_run(engine: Engine, config: JobConfig) -> dict:
    """``--dry-run``: tonight's plan, its refusals and its estimate, printed (``job.night.dry_run``); the output is read,
    never written, no lease is taken, no engine is started. The plan is made for the devices the table's last night
    ran on, else this machine's: the engine is not started to ask its own."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prepare") as pool:
        describing = pool.submit(model_for, config)
        prepared = prepare.prepare_job(config, describing.result)
    with prepared.holding:
        recorded = prepared.held.finished.execution if prepared.continues else None
        devices = Devices(recorded.get("device", "cpu"), recorded.get("device_name")) if recorded else this_machine()
        origin = "as the table's last night ran" if recorded else "this machine's; the engine was not started"
        where = f"{devices.kind}{' ' + devices.name if devices.name else ''} ({origin})"
        job, night = decide_job(prepared, engine, devices)
        require_table_allows(prepared, job, night)
        check_night(night, prepared.held, config, job.parts.table_schema)
        estimate = forecast_night(night, job, engine.name, devices, config.price_per_hour)
        record = dry_run_report(night, estimate, where, engine.name)
    print_dry_run(record, as_json=config.dry_run == "json")
    return record


def _on_the_tables_devices(preparing: Future, engine: Engine) -> tuple[Job, NightPlan] | None:
    return on_the_tables_devices(preparing.result(), engine)


@contextmanager
def _released_at_the_end(preparing: Future) -> Iterator[None]:
    """Release the prepared job's lease when the block ends, however it ends.

    The block may fail before ``prepare_job`` is done (the engine did not start): this waits
    for it then, so a lease it took is released, not left to expire. A failed ``prepare_job``
    released its own.
    """
    try:
        yield
    except BaseException as e:
        if preparing.exception() is None:  # the lease's release learns the run failed, and never masks why
            preparing.result().holding.__exit__(type(e), e, e.__traceback__)
        raise
    if preparing.exception() is None:
        preparing.result().holding.close()
