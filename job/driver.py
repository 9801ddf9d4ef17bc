"""The one ``main`` every engine runs: prepare, decide, let the engine work, verify, write the manifest.

``Engine.main`` (``job.engine``) calls ``run_job(engine, config, args)``. It prepares in a thread
while the engine starts in this one (``engine.start``: a Ray session, a Spark session), so
start-up is the two side by side; an ``--incremental`` run prepares first and starts no engine
when the input has nothing new:

- ``prepare_job`` does everything that can fail before any work: the built-in sample, the model
  (``job.execution.model_for``: weights, architecture, class names, recipe; described first, so a
  bad checkpoint, labels file or recipe stops the job before the output is touched, and before
  100 workers try), the output's lease (``job.lease.lease``: one run per output prefix), the table an
  incremental run continues (``job.output.table``), the input plan (``job.input.plan``: the dataset checks, on
  the new files only when incremental), the output prefix (``job.output.prefix``: refuse, clear, or
  keep parts).
- ``decide_job`` then fixes how the run computes, once, from the config, the described model,
  the engine's capabilities and the devices the started engine reports (``job.execution``: the
  ``Execution`` carries the model to every worker), and checks that what the run keeps was made
  the same way. The engine gets a frozen ``Job``: it reads it, never
  rewrites it, runs ``job.pending`` and commits one part per input file through ``job.output.parts``.
- ``job.finish.finish_job`` verifies the table, writes its ids index and the manifest last.
The lease is renewed from prepare to the manifest and released after, whatever happened; a
crashed process's lease stops being renewed and expires.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from job.output import prefix

from job import progress, report

from job.sample import sample
from job.config import JobConfig
from job.input.data_files import list_data_files
from job.errors import JobError
from job.execution import Devices, Execution, decide, model_for
from job.finish import finish_job
from job.output.incremental import check_new_ids
from job.lease.lease import LeaseOwner, OutputLease
from job.manifest import MANIFEST, Manifest
from job.output.parts import STAGING, Parts, input_relpath, output_options, part_name
from job.input.plan import InputPlan, plan_input
from job.output.rows import output_schema
from job.output.table import Snapshot, columns_of, unchanged_files
from storage import Location, require_bucket, resolve

if TYPE_CHECKING:
    from inference.spec import ModelSpec
    from job.engine import Engine


@dataclass(frozen=True)
class Job:
    """What an engine runs: decided before it starts work; it reads this, never rewrites it."""

    config: JobConfig  # as given (with the sample's input and output filled in)
    execution: Execution  # how it computes: decode, batch size, precision, compile, recipe
    pending: InputPlan  # the planned input files without a committed part: what the engine runs
    parts: Parts  # names and commits the part of each input file
    run_id: str


@dataclass
class PreparedJob:
    """Everything ``prepare_job`` found, before the engine's devices are known."""

    config: JobConfig
    plan: InputPlan  # every planned input file: what the finished output must hold
    model: ModelSpec  # the model, described once (job.execution.model_for)
    output: Location
    run_id: str
    lease: OutputLease  # this run's lease on the output prefix, renewed until ``holding`` is closed
    holding: ExitStack  # closing it stops renewing the lease and releases it (``run_job`` does, at the end)
    previous: Manifest | None = None  # the finished run an --incremental run continues
    state: prefix.OutputState = field(default_factory=prefix.OutputState)  # what the output prefix held

    def part_name(self, path: str) -> str:
        return part_name(self.plan.location.path, path)

    def relpath(self, path: str) -> str:
        return input_relpath(self.plan.location.path, path)

    @property
    def pending(self) -> InputPlan:
        """The planned files without a part this run keeps: what the engine runs."""
        kept = self.state.kept
        return dataclasses.replace(self.plan, files=tuple(f for f in self.plan.files if self.part_name(f.path) not in kept))

    @property
    def nothing_to_do(self) -> bool:
        """--resume on a finished job: its manifest is the answer."""
        return self.state.finished is not None and not self.config.incremental


@dataclass
class EngineRun:
    """What an engine reports of its run, beside the parts it committed."""

    settings: dict  # the engine's own facts (actors, master, shards...): the manifest's ``settings``
    progress: list[tuple[float, int]] = field(default_factory=list)  # (wall time, rows done) as rows arrived
    device_seconds: float = 0.0  # time inside the model call, all predictors together
    predictors: int = 1  # model replicas that ran at once (GPU actors, Spark tasks...)


def run_job(engine: Engine, config: JobConfig, args: argparse.Namespace, started_at: float | None = None) -> dict:
    """Prepare, decide, run ``engine.execute`` on the pending files (if any), finish; prints the summary, returns the manifest.

    ``started_at``: when the command started (the timeline's start-up counts from it); None: now.
    The output's lease, taken while preparing, is released once the manifest is written, or
    when anything fails (the engine's start included).
    """
    started_at = time.time() if started_at is None else started_at
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare") as pool:
        preparing = pool.submit(prepare_job, config)
        with _released_at_the_end(preparing):
            if config.incremental and not preparing.result().pending.files:  # no engine is started for nothing
                return without_engine(preparing.result(), engine, started_at)
            with engine.start(args) as session:
                prepared = preparing.result()
                job = decide_job(prepared, engine, session.devices())
                if prepared.nothing_to_do:
                    return prepared.state.finished.to_dict()
                run, seconds = _execute(engine, job, session, args)
            manifest = finish_job(prepared, job, engine, seconds, run, started_at)
    report.print_summary(manifest)
    return manifest.to_dict()


def _execute(engine: Engine, job: Job, session: object, args: argparse.Namespace) -> tuple[EngineRun, float]:
    """The engine's run of the pending files, timed, with the progress display open (``job.progress``)."""
    if not job.pending.files:
        return EngineRun(settings={}), 0.0
    began = time.perf_counter()
    with progress.showing(engine.name, job.pending.rows):
        run = engine.execute(job, session, args)
    return run, time.perf_counter() - began


def prepare_job(config: JobConfig) -> PreparedJob:
    """Validate everything the job needs; raise JobError/StorageError/WeightsError otherwise.

    The returned job holds the output's lease (renewed in a thread): close ``job.holding`` to
    release it. If preparing fails after taking the lease, the lease is released here.
    """
    config = _with_defaults(config)
    model = model_for(config)  # before the output is touched: a refusal here leaves it as it was
    source, output = resolve(config.input, config.s3_endpoint_url), resolve(config.output, config.s3_endpoint_url)
    listing = list_data_files(source)  # a missing or empty input stops here, before the output is touched
    require_bucket(output, "--output")
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    # --overwrite, --resume and --incremental answer a run that died; each may take its expired lease.
    lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id),
                                take_over_expired=config.resume or config.overwrite or config.incremental)
    with ExitStack() as holding:
        holding.enter_context(lease.held())
        previous = _continued(output, config)
        snapshot = Snapshot.from_dict(previous.table) if previous is not None else None
        unchanged, columns = (unchanged_files(snapshot, source.path), columns_of(snapshot.columns)) if snapshot is not None else (None, None)
        plan = plan_input(source, config, unchanged, columns, listing)
        job = PreparedJob(config, plan, model, output, run_id, lease, ExitStack(), previous)
        job.state = prefix.prepare_output(output, config, {job.part_name(f.path): f for f in plan.files}, previous)
        if job.pending.files:
            if snapshot is not None and snapshot.index is not None and not config.skip_id_check:
                kept = {job.relpath(f.path): job.part_name(f.path) for f in plan.files if job.part_name(f.path) in job.state.kept}
                check_new_ids(plan, list(job.pending.files), output, snapshot.index, kept)
        job.holding = holding.pop_all()  # prepared: the caller holds the lease from here
    return job


def _continued(output: Location, config: JobConfig) -> Manifest | None:
    """The manifest of the finished run an --incremental run continues; None for a first run (or not incremental)."""
    if not config.incremental or not prefix.has_manifest(output):
        return None
    previous = prefix.finished_manifest(output)
    if previous.table is None:
        raise JobError(f"{output.uri_of(output.join(MANIFEST))} was written by an older version, without the table's "
                       "snapshot --incremental needs; run once with --overwrite to redo the table, then --incremental")
    return previous


def decide_job(prepared: PreparedJob, engine: Engine, devices: Devices) -> Job:
    """The run's ``Execution``, decided once; what the run keeps must have been made the same way."""
    config, plan, pending = prepared.config, prepared.plan, prepared.pending
    execution = decide(config, engine.capabilities, devices, images=pending.rows, model=prepared.model, engine=engine.name)
    options = output_options(config, plan, execution)
    prefix.require_same_options(prepared.output, prepared.state, options)
    parts = Parts(prepared.output, prepared.output.join(STAGING, prepared.run_id), plan.location.path, options,
                  output_schema(execution))
    if not prepared.nothing_to_do:
        _say_what_runs(prepared, execution)
    elif not config.incremental:
        print(f"--resume: {prepared.output.uri} already holds a finished job ({MANIFEST}); nothing to do", file=sys.stderr)
    return Job(config, execution, pending, parts, prepared.run_id)


def without_engine(prepared: PreparedJob, engine: Engine, started_at: float) -> dict:
    """--incremental with no input file added or changed: no engine. Files gone lose their parts; else nothing is written.

    The options must still be the table's: decided for the devices the table's last run had.
    """
    previous = prepared.previous
    recorded = previous.execution if previous is not None else {}
    job = decide_job(prepared, engine, Devices(recorded.get("device", "cpu"), recorded.get("device_name")))
    if prepared.state.removed or previous is None:
        manifest = finish_job(prepared, job, engine, 0.0, EngineRun(settings={}), started_at)
        report.print_summary(manifest)
        return manifest.to_dict()
    print(f"--incremental: nothing new in {prepared.config.input} since run {previous.run_id} "
          f"({len(prepared.plan.files)} files unchanged); the table stays as it is", file=sys.stderr)
    return previous.to_dict()


def _say_what_runs(prepared: PreparedJob, execution: Execution) -> None:
    config, plan, pending = prepared.config, prepared.plan, prepared.pending
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} files), weights: {config.weights} "
          f"({_model_line(execution)}); {execution.device}, decode {execution.decode}, batch {execution.batch_size}, "
          f"{execution.precision}{', compiled' if execution.compile else ''}", file=sys.stderr)
    kept = len(plan.files) - len(pending.files)
    if config.resume or config.incremental:
        removed = f", removing the parts of {len(prepared.state.removed)} files gone" if prepared.state.removed else ""
        flag = "--incremental" if config.incremental else "--resume"
        print(f"{flag}: {kept} of {len(plan.files)} files kept, running {len(pending.files)}{removed}", file=sys.stderr)


def _model_line(execution: Execution) -> str:
    """``resnet50, 10 classes named by checkpoint x.pt, embeddings float16``: the model and what the rows hold."""
    model = execution.model
    names = f"named by {model.names_source}" if model.names_source else "no class names"
    outputs = "" if execution.embeddings is None else f", embeddings {execution.embeddings}"
    return f"{model.arch}, {model.num_classes} classes {names}{outputs}{'' if execution.predictions else ' only'}"


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


def _with_defaults(config: JobConfig) -> JobConfig:
    """Fill in the built-in sample and a fresh output directory when they were not given."""
    changes = {}
    if config.input is None:
        changes["input"] = sample.write_sample(tempfile.mkdtemp(prefix="sample-input-"))
        print(f"no --input: running the built-in sample with --weights {config.weights}", file=sys.stderr)
    if config.output is None:
        changes["output"] = tempfile.mkdtemp(prefix="predictions-")
    return dataclasses.replace(config, **changes) if changes else config
