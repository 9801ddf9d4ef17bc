"""The one ``main`` every engine runs: prepare, let the engine work, verify, write the manifest.

An engine's command is three lines around its own ``execute(job) -> EngineRun``::

    def main(argv=None) -> dict:
        args = get_ray_args_parser().parse_args(argv)
        return run_job("ray", config_from_args(args), lambda job: run_on_ray(job, args), packages=("ray",))

``prepare_job`` does everything that can fail before any work: the built-in sample, the input
plan (``job.plan``: the dataset checks), the output's lease (``job.lease``: one run per output
prefix), the output prefix (``job.prefix``: refuse, clear, or keep the parts of an interrupted
run), the weights (loaded once here, so a bad checkpoint stops the job before 100 workers
try). The engine then runs ``job.pending`` (the planned files without a committed part),
committing one part per input file through ``job.parts``. ``finish_job`` verifies every part
against the whole plan, checks the lease is still this run's and writes the manifest last.
The lease is renewed from prepare to the manifest and released after, whatever happened; a
crashed process's lease stops being renewed and expires.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field

from inference.names import RANDOM_WEIGHTS
from job import prefix, report, sample
from job.config import JobConfig
from job.lease import LeaseOwner, OutputLease
from job.manifest import MANIFEST, InputFiles, Manifest, write_manifest
from job.parts import STAGING, Parts, output_options
from job.plan import InputPlan, plan_input
from job.timeline import summarize
from storage import Location, require_bucket, resolve


@dataclass
class PreparedJob:
    config: JobConfig  # with the sample's input/output filled in
    plan: InputPlan  # every planned input file: what the finished output must hold
    pending: InputPlan  # the plan's files without a committed part: what the engine runs
    output: Location
    run_id: str
    parts: Parts  # names and commits the part of each input file
    lease: OutputLease  # this run's lease on the output prefix, renewed until ``holding`` is closed
    holding: ExitStack  # closing it stops renewing the lease and releases it (``run_job`` does, at the end)
    resumed: tuple[str, ...] = ()  # parts an earlier run committed, kept by --resume
    finished: Manifest | None = None  # --resume on a finished job: its manifest, nothing to run


@dataclass
class EngineRun:
    """What an engine reports of its run, beside the parts it committed."""

    settings: dict  # the engine's own facts (actors, master, shards...): the manifest's ``settings``
    progress: list[tuple[float, int]] = field(default_factory=list)  # (wall time, rows done) as parts filled
    device_seconds: float = 0.0  # time inside the model call, all predictors together
    predictors: int = 1  # model replicas that ran at once (GPU actors, Spark tasks...)


def run_job(engine: str, config: JobConfig, execute: Callable[[PreparedJob], EngineRun], packages: Sequence[str] = (),
            start_engine: AbstractContextManager | None = None) -> dict:
    """Prepare, run ``execute`` on the pending files (if any), finish; prints the summary, returns the manifest.

    ``start_engine`` (Ray's session, Spark's) is entered in this thread while another plans the
    input and loads the weights: start-up is the two side by side, not one after the other.
    The output's lease, taken while preparing, is released once the manifest is written, or
    when anything fails (the engine's start included).
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare") as pool:
        preparing = pool.submit(prepare_job, config)
        with _released_at_the_end(preparing):
            with start_engine if start_engine is not None else nullcontext():
                job = preparing.result()
                if job.finished is not None:
                    return job.finished.to_dict()
                started = time.perf_counter()
                run = execute(job) if job.pending.files else EngineRun(settings={})
                seconds = time.perf_counter() - started if job.pending.files else 0.0
            manifest = finish_job(job, engine, seconds, run, packages)
    report.print_summary(manifest)
    return manifest.to_dict()


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
        job = _prepare_output(config, plan, output, run_id, lease)
        job.holding = holding.pop_all()  # prepared: the caller holds the lease from here
    return job


def _prepare_output(config: JobConfig, plan: InputPlan, output: Location, run_id: str, lease: OutputLease) -> PreparedJob:
    """Under the lease: decide what the output prefix holds means for this run, then load the weights."""
    from inference import load_model  # torch: loaded only when there are weights to check

    parts = Parts(output, output.join(STAGING, run_id), plan.location.path, output_options(config, plan))
    state = prefix.prepare_output(output, config, parts, plan.files)
    job = PreparedJob(config, plan, plan, output, run_id, parts, lease, ExitStack(), state.committed, state.finished)
    if state.finished is not None:
        return job
    if config.weights != RANDOM_WEIGHTS:
        # Fail here, not in 100 workers. Seeded random weights cannot fail: building them here
        # would only put torch's import on the driver's path to the first batch.
        load_model(config.weights, s3_endpoint_url=config.s3_endpoint_url)
    job.pending = dataclasses.replace(plan, files=tuple(f for f in plan.files if parts.name(f) not in state.committed))
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} files), weights: {config.weights}", file=sys.stderr)
    if config.resume:
        print(f"--resume: {len(state.committed)} of {len(plan.files)} files already committed, running {len(job.pending.files)}",
              file=sys.stderr)
    return job


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


def finish_job(job: PreparedJob, engine: str, seconds: float, run: EngineRun, packages: Sequence[str] = ()) -> Manifest:
    """Verify every part against the plan, clear temporaries, write the manifest; returns it."""
    expected = {job.parts.name(f): f for f in job.plan.files}
    counts, examples = prefix.verify(job.output, expected)
    prefix.clear_staging(job.output)
    rows_run = job.pending.rows
    manifest = Manifest(
        engine=engine, run_id=job.run_id, input=job.config.input, output=job.config.output,
        config=job.config.to_dict(), output_options=job.parts.options, counts=counts,
        input_files=InputFiles(total=len(job.plan.files), resumed=len(job.resumed), run=len(job.pending.files), rows_run=rows_run),
        seconds=round(seconds, 3),
        # This run's images: with --resume, the rows of the files it ran, not those it kept.
        images_per_sec=round(rows_run / seconds, 2) if seconds > 0 else None,
        timeline=summarize(run.progress, run.device_seconds, seconds, run.predictors),
        files=sorted(expected), error_examples=examples,
        versions=report.versions(*packages), hardware=report.hardware(), settings=run.settings,
        manifest=job.output.uri_of(job.output.join(MANIFEST)),
    )
    job.lease.check()  # the manifest is written only by the run that holds the output
    write_manifest(job.output, manifest)
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
