"""The one ``main`` every engine runs: prepare, plan the night, let the engine work, verify, write the manifest.

An engine module builds its command with ``main, cli = commands(ENGINE)``. ``run_job`` prepares
in a thread while the engine starts in this one (``engine.start``: a Ray session, a Spark
session), so start-up is the two side by side; a run with nothing for the engine to do (a night
with nothing new, a stopped night whose parts were all written) starts no engine:

- ``job.prepare.prepare_job`` does everything that can fail before any work, and finds what the
  output holds (``job.night.held``).
- ``decide_job`` then fixes how the run computes, once, from the config, the described model,
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
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from inference.errors import WeightsError
from job import failpoints, prepare, progress
from job.cli import RESUME_HINT, config_from_args, run_main
from job.config import JobConfig
from job.errors import JobError, SetupError, StoppedError
from job.engine import Engine, EngineRun, EngineSession, Job
from job.execution import Devices, Execution, decide, model_for, require_capable
from job.night.begin import begin_night
from job.night.finish import Ran, finish_job
from job.night.plan import NightPlan
from job.night.planning import plan_night
from job.night.manifest import MANIFEST
from job.night.summary import decisions_line, print_summary
from job.night import formats
from job.output.parts import STAGING, Parts, output_options
from job.output.rows import output_schema
from job.prepare import PreparedJob
from job.timeline import COMMAND_STARTED_AT
from storage import StorageError


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
    """Prepare, plan the night, run ``engine.execute`` on the pending files (if any), finish; prints the summary,
    returns the manifest.

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
                    run, seconds = _execute(engine, job, session, args)
            with stopped_part_way():
                manifest = finish_job(night, job, Ran(engine, run, seconds, started_at), prepared.held, prepared.lease)
    print_summary(manifest)
    # The plan and the engine's records go before the manifest's dict is made in their memory: a million files' plan is
    # about 700 MB of the driver, and their table's entries as dicts another 330.
    del prepared, job, night, run, preparing, guess
    return manifest.to_dict()


def _on_the_tables_devices(preparing: Future, engine: Engine) -> tuple[Job, NightPlan] | None:
    """The job and night decided for the devices the table's last run had (None: no finished table to continue)."""
    prepared = preparing.result()
    if not prepared.continues:
        return None
    recorded = prepared.held.finished.execution
    return decide_job(prepared, engine, Devices(recorded.get("device", "cpu"), recorded.get("device_name")))


def _execute(engine: Engine, job: Job, session: EngineSession, args: argparse.Namespace) -> tuple[EngineRun, float]:
    """The engine's run of the pending files, timed, with the progress display open (``job.progress``)."""
    if not job.pending.files:
        return EngineRun(settings={}), 0.0
    began = time.perf_counter()
    with progress.showing(engine.name, job.pending.rows):
        run = engine.execute(job, session, args)
    return run, time.perf_counter() - began


def decide_job(prepared: PreparedJob, engine: Engine, devices: Devices,
               planned: NightPlan | None = None) -> tuple[Job, NightPlan]:
    """The run's ``Execution`` and the night's plan, each decided once for ``devices``: the plan from the options the
    execution gives the rows (``planned``, made for other devices, is the plan when those options are the same)."""
    config, plan = prepared.config, prepared.plan
    # The rows' options do not weigh the images (only --compile auto does): decided for the night's rows once known.
    shaping = decide(config, engine.capabilities, devices, images=0, model=prepared.model, engine=engine.name)
    options = output_options(config, plan, shaping)
    night = planned if planned is not None and planned.options == options else plan_night(
        config, plan, prepared.held, options, prepared.run_id)
    execution = decide(config, engine.capabilities, devices, images=night.pending.rows, model=prepared.model,
                       engine=engine.name)
    parts = Parts(prepared.output, prepared.output.join(STAGING, prepared.run_id), plan.location.path, options,
                  output_schema(execution), prepared.run_id, names=night.names,
                  in_table=config.table_format != "parquet")
    return Job(config, execution, night.pending, parts, prepared.run_id), night


def begin(prepared: PreparedJob, job: Job, night: NightPlan) -> None:
    """Before any work: the table must be ours and allow the night (its rules, its writer features); then what the plan
    asks of the output (``begin_night``), and what runs, in two lines."""
    config = prepared.config
    at = formats.TableAt.of(prepared.output, config)
    if not config.overwrite:  # an --overwrite's one new version may change the columns, and recreates a lost log
        previous = night.snapshot.state if night.snapshot is not None else None
        formats.require_table(at, config.table_format, previous, job.parts.table_schema)
    formats.require_writable(at, config.table_format, bool(night.leaving) or night.overwrite, night.leaving, night.known)
    begin_night(night, prepared.held, config, job.parts.table_schema)
    if night.done:
        files = len(night.previous.table.files) if night.previous.table is not None else len(night.previous.files)
        print(f"--resume: {prepared.output.uri} already holds every input file as listed now, as run "
              f"{night.previous.run_id} left it ({MANIFEST}, {files} {night.input.unit}); nothing is left to do",
              file=sys.stderr)
    else:
        _say_what_runs(config, night, job.execution)
    failpoints.reached("planned")


def without_engine(prepared: PreparedJob, job: Job, night: NightPlan, engine: Engine, started_at: float) -> dict:
    """A continued table with no file to run (or --resume on a whole one): no engine. What the night changes is
    committed; else nothing is written. The plan was made for the devices the table's last run had."""
    begin(prepared, job, night)
    if night.done:
        return night.previous.to_dict()
    if night.changes_table or night.to_write.files:
        with stopped_part_way():
            manifest = finish_job(night, job, Ran(engine, EngineRun(settings={}), 0.0, started_at), prepared.held,
                                  prepared.lease)
        print_summary(manifest)
        return manifest.to_dict()
    print(f"--incremental: nothing new in {prepared.config.input} since run {night.previous.run_id} "
          f"({len(prepared.plan.files)} files unchanged); the table stays as it is", file=sys.stderr)
    return night.previous.to_dict()


def _say_what_runs(config: JobConfig, night: NightPlan, execution: Execution) -> None:
    plan = night.input
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} {plan.unit}), weights: {config.weights} "
          f"({_model_line(execution)}); {execution.device}, decode {execution.decode}, batch {execution.batch_size}, "
          f"{execution.precision}{', compiled' if execution.compile else ''}", file=sys.stderr)
    if config.resume or config.incremental:
        print(f"{'--incremental' if config.incremental else '--resume'}: {decisions_line(night)}", file=sys.stderr)


def _model_line(execution: Execution) -> str:
    """``resnet50, 10 classes named by checkpoint x.pt, embeddings float16``: the model and what the rows hold."""
    model = execution.model
    names = f"named by {model.names_source}" if model.names_source else "no class names"
    classes = f"{model.num_classes} classes {names}" if not model.embedder else "an embedder"
    outputs = "" if execution.embeddings is None else f", embeddings {execution.embeddings} ({model.embedding_dim})"
    return f"{model.source}, {classes}{outputs}{'' if execution.predictions else ' only'}"


@contextmanager
def stopped_part_way() -> Iterator[None]:
    """A refusal met once the engine works on the images (the store, another writer's commit or VACUUM) as a
    ``StoppedError``: exit 4, not the 2 of a run refused before any work."""
    try:
        yield
    except SetupError:
        raise
    except (JobError, StorageError, WeightsError) as e:
        raise StoppedError(str(e)) from e


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
