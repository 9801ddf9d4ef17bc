"""The one ``main`` every engine runs: prepare, decide, let the engine work, verify, write the manifest.

An engine module builds its command with ``main, cli = commands(ENGINE)``. ``run_job`` prepares
in a thread while the engine starts in this one (``engine.start``: a Ray session, a Spark
session), so start-up is the two side by side; a run with nothing for the engine to do (a night
with nothing new, a stopped night whose parts were all written) starts no engine:

- ``job.prepare.prepare_job`` does everything that can fail before any work, and decides the
  night once (``job.output.night``: what the run keeps, adopts, runs and removes).
- ``decide_job`` then fixes how the run computes, once, from the config, the described model,
  the engine's capabilities and the devices the started engine reports (``job.execution``: the
  ``Execution`` carries the model to every worker), and checks that what the run keeps was made
  the same way. The engine gets a frozen ``Job`` (``job.engine``): it reads it, never rewrites
  it, runs ``job.pending`` and commits one part per input file through ``job.output.parts``.
- ``job.finish.finish_job`` verifies the table, writes its ids index and the manifest last.
The lease is renewed from prepare to the manifest and released after, whatever happened; a
crashed process's lease stops being renewed and expires.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from job import prepare, progress, report
from job.cli import RESUME_HINT, config_from_args, run_main
from job.config import JobConfig
from job.engine import Engine, EngineRun, EngineSession, Job
from job.execution import Devices, Execution, decide, model_for, require_capable
from job.finish import finish_job
from job.manifest import MANIFEST
from job.output import formats, prefix
from job.output.parts import STAGING, Parts, output_options
from job.output.rows import output_schema
from job.prepare import PreparedJob
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
    config = config_from_args(args)
    require_capable(config.decode, engine.capabilities, engine.name)  # before any planning
    formats.require_installed(config.table_format, config.iceberg_catalog)
    if engine.check is not None:
        engine.check(args, config)
    return run_job(engine, config, args, started_at)


def cli(engine: Engine) -> int:
    """The command: ``main`` with user-fixable errors as one line and exit code 2.

    Its start-up counts its imports: the clock starts at the interpreter's first import of our code.
    """
    return run_main(lambda argv: main(engine, argv, started_at=COMMAND_STARTED_AT), interrupted_hint=RESUME_HINT)


def run_job(engine: Engine, config: JobConfig, args: argparse.Namespace, started_at: float | None = None) -> dict:
    """Prepare, decide, run ``engine.execute`` on the pending files (if any), finish; prints the summary, returns the manifest.

    ``started_at``: when the command started (the timeline's start-up counts from it); None: now.
    The output's lease, taken while preparing, is released once the manifest is written, or
    when anything fails (the engine's start included).
    """
    started_at = time.time() if started_at is None else started_at
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prepare") as pool:
        # The model (weights read, names, recipe) is described while the input is listed and planned.
        describing = pool.submit(model_for, config)
        preparing = pool.submit(prepare.prepare_job, config, describing.result)
        with _released_at_the_end(preparing):
            if _needs_no_engine(config, preparing):
                return without_engine(preparing.result(), engine, started_at)
            with engine.start(args) as session:
                prepared = preparing.result()
                job = decide_job(prepared, engine, session.devices())
                run, seconds = _execute(engine, job, session, args)
            manifest = finish_job(prepared, job, engine, seconds, run, started_at)
    report.print_summary(manifest)
    # The plan and the engine's records go before the manifest's dict is made in their memory: a million files' plan is
    # about 700 MB of the driver, and their table's entries as dicts another 330.
    del prepared, job, run, preparing
    return manifest.to_dict()


def _needs_no_engine(config: JobConfig, preparing: Future) -> bool:
    """Whether a run that continues a table has no file with rows to run: then no engine is started for nothing.

    Only --resume and --incremental wait for the plan to know it; a first run starts its engine
    while it plans.
    """
    if not (config.resume or config.incremental):
        return False
    prepared = preparing.result()
    return prepared.night.previous is not None and (prepared.night.done or not prepared.pending.files)


def _execute(engine: Engine, job: Job, session: EngineSession, args: argparse.Namespace) -> tuple[EngineRun, float]:
    """The engine's run of the pending files, timed, with the progress display open (``job.progress``)."""
    if not job.pending.files:
        return EngineRun(settings={}), 0.0
    began = time.perf_counter()
    with progress.showing(engine.name, job.pending.rows):
        run = engine.execute(job, session, args)
    return run, time.perf_counter() - began


def decide_job(prepared: PreparedJob, engine: Engine, devices: Devices) -> Job:
    """The run's ``Execution``, decided once; what the run keeps must have been made the same way."""
    config, plan, night = prepared.config, prepared.plan, prepared.night
    execution = decide(config, engine.capabilities, devices, images=prepared.pending.rows, model=prepared.model,
                       engine=engine.name)
    options = output_options(config, plan, execution)
    prefix.require_same_options(prepared.output, night, options)
    parts = Parts(prepared.output, prepared.output.join(STAGING, prepared.run_id), plan.location.path, options,
                  output_schema(execution), prepared.run_id, salt=prepared.salt, rerun=prepared.rerun,
                  in_table=config.table_format != "parquet")
    previous = night.snapshot.state if night.snapshot is not None else None
    if not config.overwrite:  # an --overwrite's one new version may change the columns, and recreates a lost log
        formats.require_table(formats.TableAt.of(prepared.output, config), config.table_format, previous, parts.table_schema)
    if night.done:
        print(f"--resume: {prepared.output.uri} already holds a finished job ({MANIFEST}); nothing to do", file=sys.stderr)
    else:
        _say_what_runs(prepared, execution)
    return Job(config, execution, prepared.pending, parts, prepared.run_id)


def without_engine(prepared: PreparedJob, engine: Engine, started_at: float) -> dict:
    """A continued table with no file to run (or --resume on a whole one): no engine. What the night changes is committed; else nothing is written.

    The options must still be the table's: decided for the devices the table's last run had.
    """
    night = prepared.night
    recorded = night.previous.execution
    job = decide_job(prepared, engine, Devices(recorded.get("device", "cpu"), recorded.get("device_name")))
    if night.done:
        return night.previous.to_dict()
    if night.changes_table or prepared.to_write.files:
        manifest = finish_job(prepared, job, engine, 0.0, EngineRun(settings={}), started_at)
        report.print_summary(manifest)
        return manifest.to_dict()
    print(f"--incremental: nothing new in {prepared.config.input} since run {night.previous.run_id} "
          f"({len(prepared.plan.files)} files unchanged); the table stays as it is", file=sys.stderr)
    return night.previous.to_dict()


def _say_what_runs(prepared: PreparedJob, execution: Execution) -> None:
    config, plan, night = prepared.config, prepared.plan, prepared.night
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} {plan.unit}), weights: {config.weights} "
          f"({_model_line(execution)}); {execution.device}, decode {execution.decode}, batch {execution.batch_size}, "
          f"{execution.precision}{', compiled' if execution.compile else ''}", file=sys.stderr)
    if config.resume or config.incremental:
        running = len(prepared.to_write.files)
        removed = f", removing the parts of {len(night.removed)} {plan.unit} replaced or gone" if night.removed else ""
        if night.leaving:  # a table's rows leave by their source, wherever other writers moved them
            removed = f", taking the rows of {len(night.leaving)} {plan.unit} replaced or gone out of the table"
        flag = "--incremental" if config.incremental else "--resume"
        print(f"{flag}: {len(plan.files) - running} of {len(plan.files)} {plan.unit} kept, running {running}{removed}",
              file=sys.stderr)


def _model_line(execution: Execution) -> str:
    """``resnet50, 10 classes named by checkpoint x.pt, embeddings float16``: the model and what the rows hold."""
    model = execution.model
    names = f"named by {model.names_source}" if model.names_source else "no class names"
    classes = f"{model.num_classes} classes {names}" if not model.embedder else "an embedder"
    outputs = "" if execution.embeddings is None else f", embeddings {execution.embeddings} ({model.embedding_dim})"
    return f"{model.source}, {classes}{outputs}{'' if execution.predictions else ' only'}"


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
