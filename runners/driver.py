"""The driver-side steps every runner shares, before and after its engine does the work.

``prepare_job`` does everything that can fail before any work: resolve the built-in sample,
plan the input, check the output prefix, load the weights once. ``finish_job`` verifies the
staged output, commits it and writes the manifest. A runner's own code sits in between.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass

from inference import load_model
from runners import commit, report, sample
from runners.job import JobConfig
from runners.source import InputPlan, plan_input
from storage import Location, resolve


@dataclass
class PreparedJob:
    config: JobConfig  # with the sample's input/output filled in
    plan: InputPlan
    output: Location
    run_id: str
    staging: str  # path in the output filesystem where the engine writes its Parquet files


def prepare_job(config: JobConfig) -> PreparedJob:
    """Validate everything the job needs; raise JobError/StorageError/WeightsError otherwise."""
    config = _with_defaults(config)
    plan = plan_input(resolve(config.input, config.s3_endpoint_url), config)
    output = resolve(config.output, config.s3_endpoint_url)
    commit.prepare_output(output, config.overwrite)
    load_model(config.weights, s3_endpoint_url=config.s3_endpoint_url)  # fail here, not in 100 workers
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    print(f"input: {config.input} ({plan.rows} images in {len(plan.files)} files), weights: {config.weights}", file=sys.stderr)
    return PreparedJob(config, plan, output, run_id, commit.staging_path(output, run_id))


def finish_job(job: PreparedJob, engine: str, seconds: float, extra: dict | None = None) -> dict:
    """Verify, commit and describe the output; returns the manifest."""
    counts, examples = commit.verify(job.output, job.staging, job.plan.rows)
    files = commit.commit(job.output, job.staging, job.run_id)
    manifest = {
        "engine": engine,
        "run_id": job.run_id,
        "input": job.config.input,
        "output": job.config.output,
        "config": job.config.to_dict(),
        "counts": dataclasses.asdict(counts),
        "seconds": round(seconds, 3),
        "images_per_sec": round(counts.rows_out / seconds, 2) if seconds > 0 else None,
        "files": files,
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
