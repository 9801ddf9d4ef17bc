"""python -m runners.sagemaker_job: batch inference on SageMaker Batch Transform, or --local.

    python -m runners.sagemaker_job --input s3://bucket/images/ --output s3://bucket/preds/ \\
        --role arn:aws:iam::123456789012:role/batch-inference --region us-east-1
    python -m runners.sagemaker_job --local --weights random --input ./images --output ./preds

Both paths do the same steps: cut the input into Parquet shards under MaxPayloadInMB, build
model.tar.gz (our handler and shared code), transform every shard (on AWS: a transform job;
``--local``: a loopback server holding the packaged handler), turn the ``.out`` objects into
one committed part per input file, and let the shared driver verify them and write the
manifest. ``--resume`` shards and transforms only the input files without a part.

``--models FILE`` (several models, ``job.several``): one archive holds every model, one transform job serves them
all; each shard is read and its images decoded once in the container for every model that scores its input file, and
each ``.out`` is split into each model's part of that file, committed under that model's table.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from runners import require_extra

require_extra("sagemaker", __name__)  # before the SDK's and toolkit's imports: a missing extra is one line

from inference.sources import parse_model  # noqa: E402
from job import progress  # noqa: E402
from job.config import JobConfig
from job.driver import commands
from job.engine import Engine, EngineRun, Job
from job.errors import JobError
from job.execution import Capabilities, Devices, this_machine
from job.output.parts import STAGING, Parts
from runners.sagemaker import aws, container, local_transform, package, server, wheels
from runners.sagemaker.assemble import ModelTable, assemble, assemble_several
from runners.sagemaker.instances import devices_of
from runners.sagemaker.options import SageMakerOptions, add_sagemaker_options, options_from_args
from runners.sagemaker.shard import Sharding, write_shards
from storage import Location, resolve, storage_errors

SDK_PACKAGES = ("sagemaker-core", "sagemaker-pytorch-inference")  # versions the manifest records


def staging_location(job: Job, options: SageMakerOptions) -> Location:
    """Where this run's shards, model.tar.gz and .out objects go (a prefix per run)."""
    if options.staging_s3_uri:
        base = resolve(options.staging_s3_uri, job.config.s3_endpoint_url)
    else:
        # Under the output's _staging/: the driver clears it, readers never see it.
        base = child(job.parts.output, STAGING)
    if not options.local and not base.is_s3:
        raise JobError(f"SageMaker reads and writes S3 only, and {base.uri} is not on S3; pass --staging-s3-uri s3://bucket/prefix/")
    return child(base, f"sagemaker-{job.run_id}")


def child(location: Location, name: str) -> Location:
    path = location.join(name)
    return Location(location.filesystem, path, location.uri_of(path))


def transform_local(job: Job, options: SageMakerOptions, tar_path: str, shards: list[str], staging: Location) -> dict[str, str]:
    """Serve the packaged handler on loopback and send it every shard; returns failures."""
    with tempfile.TemporaryDirectory(prefix="sagemaker-model-") as model_dir:
        serving = server.start_server(package.unpack(tar_path, model_dir), options.host, 0, options.max_payload_mb)
        try:
            print(f"sagemaker --local: serving on {serving.url}, {len(shards)} shards", file=sys.stderr)
            transform = local_transform.Transform(serving.url, child(staging, "input"), child(staging, "output"),
                                                  options.max_concurrent_transforms, options.max_payload_mb,
                                                  several=len(job.runs) > 1)
            return local_transform.run_transform(transform, shards)
        finally:
            serving.shutdown()
            serving.server_close()


def aws_target(options: SageMakerOptions) -> tuple[object, str]:
    """The SDK session and serving image, found before any work so a bad region stops early."""
    session = aws.sagemaker_session(options.region)
    return session, options.image_uri or container.image_uri(session.boto_region_name, options.instance_type)


def transform_aws(job: Job, options: SageMakerOptions, tar_path: str, staging: Location) -> dict[str, str]:
    """Upload the model, run a transform job, wait, delete the run's model; returns failures
    (none known by shard on AWS)."""
    session, image = aws_target(options)
    model = resolve(options.model_s3_uri, job.config.s3_endpoint_url) if options.model_s3_uri else child(staging, "model.tar.gz")
    request = aws.TransformRequest(
        name=aws.job_name(job.run_id),
        model_data_url=package.upload(tar_path, model),
        input_uri=child(staging, "input").uri + "/",
        output_uri=child(staging, "output").uri + "/",
    )
    aws.create_model(session, request, options, image)
    try:
        aws.start_transform(session, request, options)
        print(f"sagemaker: started transform job {request.name} on {options.instance_count} x {options.instance_type}", file=sys.stderr)
        described = aws.wait(session.sagemaker_client, request.name, options.timeout_minutes * 60)
    finally:
        aws.delete_model(session, request.name)
    return {} if described["TransformJobStatus"] == "Completed" else {"*": described.get("FailureReason", "the job failed")}


def run_transform(job: Job, options: SageMakerOptions, staging: Location,
                  serving_wheels: list[Path]) -> tuple[Sharding, dict[str, str]]:
    several = len(job.runs) > 1  # each shard names its input file: the container runs the models that score it
    sharding = write_shards(job.pending, child(staging, "input"), options.max_payload_mb, file_column=several)
    with tempfile.TemporaryDirectory(prefix="sagemaker-package-") as tmp:
        tar_path = package.build_model_tar(job.config, job.execution, tmp, serving_wheels, job.runs if several else ())
        if options.local:
            return sharding, transform_local(job, options, tar_path, sharding.shards, staging)
        return sharding, transform_aws(job, options, tar_path, staging)


def transform_and_assemble(job: Job, options: SageMakerOptions, serving_wheels: list[Path]) -> EngineRun:
    """Shard, transform and commit the part of every pending input file (several models: each model's part)."""
    staging = staging_location(job, options)
    sharding, failures = run_transform(job, options, staging, serving_wheels)
    if "*" in failures:  # AWS: the job failed; shards without .out carry its reason
        failures = {shard: failures["*"] for shard in sharding.shards}
    assembling = assemble_models if len(job.runs) > 1 else assemble_model
    run = assembling(job, options, sharding, failures, staging)
    with storage_errors(staging.uri):
        staging.filesystem.delete_dir(staging.path)  # shards and .out objects: only the committed parts stay
    return run


def assemble_model(job: Job, options: SageMakerOptions, sharding: Sharding, failures: dict[str, str],
                   staging: Location) -> EngineRun:
    """One model: each input file's rows of its shards' ``.out`` objects, committed as its part."""
    events: list[tuple[float, int]] = []  # (when a shard's .out was written, its rows): the timeline

    def commit(index: int, rows: pa.Table) -> str:
        if not options.local:  # on AWS the display learns of rows only now; --local's counted each response
            progress.advance(rows.num_rows)
        return job.parts.write(job.pending.files[index], rows)

    failed = assemble(sharding.files, child(staging, "input"), child(staging, "output"), commit, job.parts.schema, failures,
                      shard_done=lambda at, rows: events.append((at, rows)))
    # The model runs inside the container, out of the driver's sight: no device figure.
    return EngineRun(settings=_settings(options, sharding, failed), progress=events, device_seconds=0.0, predictors=0)


def assemble_models(job: Job, options: SageMakerOptions, sharding: Sharding, failures: dict[str, str],
                    staging: Location) -> EngineRun:
    """Several models: each model's rows of each ``.out`` committed as its part of the shard's input file; each
    model's progress and its time in its calls, and the run's decodes, as the container's rows tell them."""
    def committer(parts: Parts) -> Callable[[int, pa.Table], str]:
        def commit(index: int, rows: pa.Table) -> str:
            if not options.local:  # on AWS the display learns of rows only now; --local's counted each response
                progress.advance(rows.num_rows)
            return parts.write(job.pending.files[index], rows)
        return commit

    tables = [ModelTable(run.parts.schema, run.files, committer(run.parts)) for run in job.runs]
    done = assemble_several(sharding.files, child(staging, "input"), child(staging, "output"), tables, failures)
    # The devices are out of the driver's sight (no busy fraction), but the rows carry each model's time in its calls.
    return EngineRun(settings=_settings(options, sharding, done.failed), progress=done.progress[0],
                     device_seconds=sum(done.model_seconds), predictors=0,
                     models=[(events, seconds) for events, seconds in zip(done.progress, done.model_seconds)],
                     decodes=done.decodes, decode_seconds=round(done.decode_seconds, 3))


def _settings(options: SageMakerOptions, sharding: Sharding, failed: list[str]) -> dict:
    """The manifest's ``settings``: the SageMaker options, the shards and those that failed."""
    facts = {"shards": len(sharding.shards), "failed_shards": failed}
    return {"sagemaker": {**dataclasses.asdict(options), **facts}}


class SageMakerSession:
    """The AWS side found before any work (a bad region or a missing wheel stops the job early), or --local."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.options = options_from_args(args)
        self.wheels: list[Path] = []

    def __enter__(self) -> SageMakerSession:
        if not self.options.local:
            # The AWS container has no network: the wheels it lacks travel in the archive.
            self.wheels = wheels.fetch(self.options.wheelhouse)
            aws_target(self.options)
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def devices(self) -> Devices:
        """--local: this machine's; on AWS: the instance type's (the model runs there, out of our sight)."""
        if not self.options.local:
            return devices_of(self.options.instance_type)
        return this_machine()


def check_args(args: argparse.Namespace, config: JobConfig) -> None:
    """Refusals before any planning: a bad option; on AWS, a model (each --models entry's) whose library the official
    serving image lacks."""
    options = options_from_args(args)  # a bad option stops the job before any planning
    source = parse_model(config.model).source
    if source.extra is not None and not options.local and options.image_uri is None:
        # The archive carries the wheels the official image lacks for our code (wheels.SERVING_PACKAGES), not a
        # model library's whole dependency tree, which --no-index installs could not complete.
        named = f"--models {args.models} entry's model" if args.models is not None else "--model"
        raise JobError(f"{named} {config.model} on AWS needs the [{source.extra}] extra's packages "
                       f"({', '.join(source.modules)}) in the serving image, which the official PyTorch image lacks: "
                       "pass --image-uri of an image that has them, or run it here with --local")


ENGINE = Engine(
    name="sagemaker", module="runners.sagemaker_job", description=__doc__.splitlines()[0],
    # The handler decodes on the instance's CPUs, request by request: no device decode, nothing to adapt.
    capabilities=Capabilities(decodes=("cpu",), adapts_auto=False),
    add_arguments=add_sagemaker_options, start=SageMakerSession,
    execute=lambda job, session, args: transform_and_assemble(job, session.options, session.wheels),
    packages=SDK_PACKAGES, compare_options=("--local",),  # the packaged handler behind a loopback server
    check=check_args,
)
main, cli = commands(ENGINE)

if __name__ == "__main__":
    sys.exit(cli())
