"""The steps of a night on an engine, which every run takes in this order: decide, begin, execute, finish.

``job.driver`` runs them for one model's table, ``job.several.run`` for each table of a run of several models (one
engine run for them all). Each step is a function of what the steps before it decided:

- ``decide_job``: how the run computes (``job.execution``) and what the night does with the output
  (``job.night.planning.plan_night``), once, for the devices the engine reports;
- ``begin``: the table must allow the night (its rules, its columns); what the plan clears; the night's lines;
- ``execute``: the engine's run of the pending files, timed, with the progress display;
- ``without_engine``: a continued table with nothing to score: what the night changes is committed, or nothing is.
A refusal met once the engine works on the images is a ``StoppedError`` (``stopped_part_way``): exit 4.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from inference.errors import WeightsError
from job import failpoints, progress
from job.config import JobConfig
from job.costs.forecast import rollout_window
from job.engine import Engine, EngineRun, EngineSession, Job
from job.errors import JobError, SetupError, StoppedError
from job.execution import Devices, Execution, decide
from job.night import formats
from job.night.begin import begin_night
from job.night.finish import Ran, finish_job
from job.night.manifest import MANIFEST
from job.night.options import model_label
from job.night.plan import NightPlan
from job.night.planning import plan_night
from job.night.summary import decisions_line, print_summary
from job.output.parts import STAGING, Parts, output_options
from job.output.rows import output_schema
from job.prepare import PreparedJob
from storage import StorageError


def on_the_tables_devices(prepared: PreparedJob, engine: Engine) -> tuple[Job, NightPlan] | None:
    """The job and night decided for the devices the table's last run had (None: no finished table to continue)."""
    if not prepared.continues:
        return None
    recorded = prepared.held.finished.execution
    return decide_job(prepared, engine, Devices(recorded.get("device", "cpu"), recorded.get("device_name")))


def execute(engine: Engine, job: Job, session: EngineSession, args: argparse.Namespace) -> tuple[EngineRun, float]:
    """The engine's run of the pending files, timed, with the progress display open (``job.progress``: several models,
    the rows of every model)."""
    if not job.pending.files:
        return EngineRun(settings={}), 0.0
    files = job.pending.files
    rows = sum(files[i].rows for run in job.models for i in sorted(run.files or range(len(files)))) or job.pending.rows
    began = time.perf_counter()
    with progress.showing(engine.name, rows):
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
    window = (rollout_window(config.rollout_time, prepared.output, engine.name, model_label(options))
              if config.rollout_time else None)
    night = planned if planned is not None and planned.options == options else plan_night(
        config, plan, prepared.held, options, prepared.run_id, window)
    execution = decide(config, engine.capabilities, devices, images=night.pending.rows, model=prepared.model,
                       engine=engine.name)
    parts = Parts(prepared.output, prepared.output.join(STAGING, prepared.run_id), plan.location.path, options,
                  output_schema(execution), prepared.run_id, names=night.names,
                  in_table=config.table_format != "parquet")
    return Job(config, execution, night.pending, parts, prepared.run_id), night


def begin(prepared: PreparedJob, job: Job, night: NightPlan) -> None:
    """Before any work: the table must be ours and allow the night (``require_table_allows``); then what the plan asks of
    the output (``begin_night``: its own refusals, then what it clears), and what runs, in two lines."""
    config = prepared.config
    require_table_allows(prepared, job, night)
    begin_night(night, prepared.held, config, job.parts.table_schema)
    if night.done:
        files = len(night.previous.table.files) if night.previous.table is not None else len(night.previous.files)
        print(f"--resume: {prepared.output.uri} already holds every input file as listed now, as run "
              f"{night.previous.run_id} left it ({MANIFEST}, {files} {night.input.unit}); nothing is left to do",
              file=sys.stderr)
    else:
        _say_what_runs(config, night, job.execution)
    failpoints.reached("planned")


def require_table_allows(prepared: PreparedJob, job: Job, night: NightPlan) -> None:
    """The table must be ours and allow the night: its columns, its rules, its writer features (reads only)."""
    config = prepared.config
    at = formats.TableAt.of(prepared.output, config)
    if not config.overwrite:  # an --overwrite's one new version may change the columns, and recreates a lost log
        previous = night.snapshot.state if night.snapshot is not None else None
        formats.require_table(at, config.table_format, previous, job.parts.table_schema)
    formats.require_writable(at, config.table_format, bool(night.leaving) or night.overwrite, night.leaving, night.known)


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
    if night.window is not None:
        print(f"--rollout-time: {night.window}", file=sys.stderr)


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
