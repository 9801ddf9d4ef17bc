"""The one ``main`` every engine runs: prepare, decide, let the engine work, verify, write the manifest.

``Engine.main`` (``job.engine``) calls ``run_job(engine, config, args)``. It prepares in a thread
while the engine starts in this one (``engine.start``: a Ray session, a Spark session), so
start-up is the two side by side:

- ``prepare_job`` does everything that can fail before any work: the built-in sample, the input
  plan (``job.plan``: the dataset checks), the output's lease (``job.lease``: one run per output
  prefix), the output prefix (``job.prefix``: refuse, clear, or find the parts of an interrupted
  run), the weights (loaded once here, so a bad checkpoint stops the job before 100 workers try).
- ``decide`` then fixes how the run computes, once, from the config, the engine's capabilities
  and the devices the started engine reports (``job.execution``), and checks that what
  ``--resume`` keeps was made the same way. The engine gets a frozen ``Job``: it reads it, never
  rewrites it, runs ``job.pending`` and commits one part per input file through ``job.parts``.
- ``finish_job`` verifies every part against the whole plan, checks the lease is still this
  run's and writes the manifest last.
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

from inference.names import RANDOM_WEIGHTS
from job import prefix, progress, report, sample
from job.config import JobConfig
from job.execution import Devices, Execution, decide
from job.lease import LeaseOwner, OutputLease
from job.manifest import MANIFEST, InputFiles, Manifest, write_manifest
from job.parts import STAGING, Parts, output_options, part_name
from job.plan import InputPlan, plan_input
from job.timeline import summarize
from storage import Location, require_bucket, resolve

if TYPE_CHECKING:
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
    output: Location
    run_id: str
    lease: OutputLease  # this run's lease on the output prefix, renewed until ``holding`` is closed
    holding: ExitStack  # closing it stops renewing the lease and releases it (``run_job`` does, at the end)
    state: prefix.OutputState = field(default_factory=prefix.OutputState)  # what the output prefix held

    def part_name(self, path: str) -> str:
        return part_name(self.plan.location.path, path)


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
            with engine.start(args) as session:
                prepared = preparing.result()
                job = decide_job(prepared, engine, session.devices())
                if prepared.state.finished is not None:
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
    plan = plan_input(resolve(config.input, config.s3_endpoint_url), config)
    output = resolve(config.output, config.s3_endpoint_url)
    require_bucket(output, "--output")
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    # --overwrite and --resume are the answers to a run that died; both may take its expired lease.
    lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id), take_over_expired=config.resume or config.overwrite)
    with ExitStack() as holding:
        holding.enter_context(lease.held())
        job = PreparedJob(config, plan, output, run_id, lease, ExitStack())
        job.state = prefix.prepare_output(output, config, {job.part_name(f.path): f for f in plan.files})
        _check_weights(job)
        job.holding = holding.pop_all()  # prepared: the caller holds the lease from here
    return job


def _check_weights(job: PreparedJob) -> None:
    """Load the weights once here, so a bad checkpoint fails now, not in 100 workers."""
    if job.state.finished is not None or job.config.weights == RANDOM_WEIGHTS:
        # Seeded random weights cannot fail: building them here would only put torch's import
        # on the driver's path to the first batch.
        return
    from inference import load_model  # torch: loaded only when there are weights to check

    load_model(job.config.weights, s3_endpoint_url=job.config.s3_endpoint_url)


def decide_job(prepared: PreparedJob, engine: Engine, devices: Devices) -> Job:
    """The run's ``Execution``, decided once; what --resume keeps must have been made the same way."""
    config, plan = prepared.config, prepared.plan
    pending = dataclasses.replace(plan, files=tuple(f for f in plan.files if prepared.part_name(f.path) not in prepared.state.kept))
    execution = decide(config, engine.capabilities, devices, images=pending.rows, engine=engine.name)
    options = output_options(config, plan, execution)
    prefix.require_same_options(prepared.output, prepared.state, options)
    parts = Parts(prepared.output, prepared.output.join(STAGING, prepared.run_id), plan.location.path, options)
    if prepared.state.finished is not None:
        print(f"--resume: {prepared.output.uri} already holds a finished job ({MANIFEST}); nothing to do", file=sys.stderr)
    else:
        _say_what_runs(config, plan, pending, execution)
    return Job(config, execution, pending, parts, prepared.run_id)


def _say_what_runs(config: JobConfig, plan: InputPlan, pending: InputPlan, execution: Execution) -> None:
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} files), weights: {config.weights}; "
          f"{execution.device}, decode {execution.decode}, batch {execution.batch_size}, {execution.precision}"
          f"{', compiled' if execution.compile else ''}", file=sys.stderr)
    if config.resume:
        print(f"--resume: {len(plan.files) - len(pending.files)} of {len(plan.files)} files already committed, "
              f"running {len(pending.files)}", file=sys.stderr)


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


def finish_job(prepared: PreparedJob, job: Job, engine: Engine, seconds: float, run: EngineRun, started_at: float) -> Manifest:
    """Verify every part against the plan, clear temporaries, write the manifest; returns it."""
    expected = {job.parts.name(f): f for f in prepared.plan.files}
    counts, examples = prefix.verify(prepared.output, expected)
    prefix.clear_staging(prepared.output)
    rows_run = job.pending.rows
    manifest = Manifest(
        engine=engine.name, run_id=job.run_id, input=job.config.input, output=job.config.output,
        config=job.config.to_dict(), execution=job.execution.to_dict(), output_options=job.parts.options, counts=counts,
        input_files=InputFiles(total=len(prepared.plan.files), resumed=len(prepared.state.kept), run=len(job.pending.files),
                               rows_run=rows_run),
        seconds=round(seconds, 3),
        # This run's images: with --resume, the rows of the files it ran, not those it kept.
        images_per_sec=round(rows_run / seconds, 2) if seconds > 0 else None,
        timeline=summarize(run.progress, run.device_seconds, seconds, run.predictors, started_at),
        files=sorted(expected), error_examples=examples,
        versions=report.versions(*engine.packages), hardware=report.hardware(), settings=run.settings,
        manifest=prepared.output.uri_of(prepared.output.join(MANIFEST)),
    )
    prepared.lease.check()  # the manifest is written only by the run that holds the output
    write_manifest(prepared.output, manifest)
    return manifest


def _with_defaults(config: JobConfig) -> JobConfig:
    """Fill in the built-in sample and a fresh output directory when they were not given."""
    changes = {}
    if config.input is None:
        changes["input"] = sample.write_sample(tempfile.mkdtemp(prefix="sample-input-"))
        print(f"no --input: running the built-in sample with --weights {config.weights}", file=sys.stderr)
    if config.output is None:
        changes["output"] = tempfile.mkdtemp(prefix="predictions-")
    return dataclasses.replace(config, **changes) if changes else config
