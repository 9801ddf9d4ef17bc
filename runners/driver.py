"""The driver-side steps every runner shares, before and after its engine does the work.

``prepare_job`` does everything that can fail before any work: resolve the built-in sample,
plan the input, check the output prefix (``runners.resume``: refuse, clear, or keep the parts
of an interrupted run), load the weights once. The engine then runs ``job.pending`` (the
planned files without a committed part) and commits one part per input file through
``job.parts``. ``finish_job`` verifies every part against the whole plan and writes the
manifest last. A runner's own code sits in between::

    job = prepare_job(config)
    if job.finished is not None:  # --resume on a finished job
        return job.finished
    ...engine runs job.pending, writing with job.parts...
    return finish_job(job, engine, seconds, extra)
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass

from inference import load_model
from job import sample
from runners import commit, report, resume
from runners.job import JobConfig
from runners.source import InputPlan, plan_input
from storage import Location, resolve


@dataclass
class PreparedJob:
    config: JobConfig  # with the sample's input/output filled in
    plan: InputPlan  # every planned input file: what the finished output must hold
    pending: InputPlan  # the plan's files without a committed part: what the engine runs
    output: Location
    run_id: str
    parts: commit.Parts  # names and commits the part of each input file
    resumed: tuple[str, ...] = ()  # parts an earlier run committed, kept by --resume
    finished: dict | None = None  # --resume on a finished job: its manifest, nothing to run


def prepare_job(config: JobConfig) -> PreparedJob:
    """Validate everything the job needs; raise JobError/StorageError/WeightsError otherwise."""
    config = _with_defaults(config)
    plan = plan_input(resolve(config.input, config.s3_endpoint_url), config)
    output = resolve(config.output, config.s3_endpoint_url)
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    parts = commit.Parts(output, output.join(commit.STAGING, run_id), plan.location.path, commit.output_options(config, plan))
    state = resume.prepare_output(output, config, parts, plan.files)
    job = PreparedJob(config, plan, plan, output, run_id, parts, state.committed, state.finished)
    if state.finished is not None:
        return job
    load_model(config.weights, s3_endpoint_url=config.s3_endpoint_url)  # fail here, not in 100 workers
    job.pending = dataclasses.replace(plan, files=tuple(f for f in plan.files if parts.name(f) not in state.committed))
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} files), weights: {config.weights}", file=sys.stderr)
    if config.resume:
        print(f"--resume: {len(state.committed)} of {len(plan.files)} files already committed, running {len(job.pending.files)}",
              file=sys.stderr)
    return job


def finish_job(job: PreparedJob, engine: str, seconds: float, extra: dict | None = None) -> dict:
    """Verify every part against the plan, clear temporaries, write the manifest; returns it."""
    expected = {job.parts.name(f): f for f in job.plan.files}
    counts, examples = commit.verify(job.output, expected)
    commit.clear_staging(job.output)
    rows_run = job.pending.rows
    manifest = {
        "engine": engine,
        "run_id": job.run_id,
        "input": job.config.input,
        "output": job.config.output,
        "config": job.config.to_dict(),
        "output_options": job.parts.options,  # what --resume compares
        "counts": dataclasses.asdict(counts),
        "input_files": {"total": len(job.plan.files), "resumed": len(job.resumed), "run": len(job.pending.files),
                        "rows_run": rows_run},
        "seconds": round(seconds, 3),
        # This run's images: with --resume, the rows of the files it ran, not those it kept.
        "images_per_sec": round(rows_run / seconds, 2) if seconds > 0 else None,
        "files": sorted(expected),
        "error_examples": examples,
        "versions": report.versions(*(extra or {}).get("packages", ())),
        "hardware": report.hardware(),
        **{k: v for k, v in (extra or {}).items() if k != "packages"},
    }
    manifest["manifest"] = job.output.uri_of(job.output.join(commit.MANIFEST))
    commit.write_manifest(job.output, manifest)
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
