"""The real service, through the SageMaker Python SDK: a model, a transform job, wait, clean up.

Use for runs without ``--local``. The shards and model.tar.gz must already be on S3
(``shard``, ``package``); afterwards ``assemble`` reads the ``.out`` objects. The SDK
(``sagemaker.core``, part of the ``sagemaker`` 3.x umbrella) creates the model and the
transform job (``Transformer``) and deletes the model; polling stays a plain
DescribeTransformJob loop, because this runner prints each status change, keeps the
``.out`` objects of a Failed job and gives up at ``--timeout-minutes``, which the SDK's
wait does not. Clients honour ``AWS_ENDPOINT_URL_SAGEMAKER`` / ``AWS_ENDPOINT_URL`` like
every AWS SDK (tests point them at moto).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from job.errors import JobError
from runners.sagemaker import container
from runners.sagemaker.options import SageMakerOptions
from runners.sagemaker.serving.codecs import PARQUET

POLL_S = 30  # DescribeTransformJob is throttled per account; every 30 s is plenty for jobs of minutes
# Every SageMaker API call this module makes: what the caller's role needs, on the run's own
# model and transform job (terraform's sagemaker_runner policy; tests hold the two together).
API_OPERATIONS = ("CreateModel", "CreateTransformJob", "DescribeTransformJob", "DeleteModel")
NAME_PREFIX = "sbi-"  # of every run's model and transform job: the runner policy's resources
DONE = ("Completed", "Failed", "Stopped")
INSTALL = "pip install 'streaming-batch-inference[sagemaker]'"


@dataclass(frozen=True)
class TransformRequest:
    name: str  # model and transform job name (unique per run)
    model_data_url: str  # s3://.../model.tar.gz
    input_uri: str  # s3:// prefix of the shards
    output_uri: str  # s3:// prefix for the .out objects


def job_name(run_id: str) -> str:
    """The run's model and transform job name (SageMaker allows 63 characters)."""
    return f"{NAME_PREFIX}{run_id}"[:63]


def sagemaker_session(region: str | None):
    """An SDK session for ``region`` (else the environment's); JobError without one."""
    try:
        import boto3
        from sagemaker.core.helper.session_helper import Session
    except ImportError as e:
        raise JobError(f"the AWS path needs the SageMaker SDK: {INSTALL}") from e
    boto_session = boto3.Session(region_name=region)
    if boto_session.region_name is None:
        raise JobError("no AWS region: pass --region or set AWS_REGION")
    return _call("the SDK session", lambda: Session(boto_session=boto_session))


def create_model(session, request: TransformRequest, options: SageMakerOptions, image: str) -> None:
    """The run's model: our archive in the PyTorch image, with no network (it needs none), and
    TorchServe's request limit raised to the job's MaxPayloadInMB."""
    environment = {**container.environment(options.max_payload_mb), "SAGEMAKER_REGION": session.boto_region_name}
    definition = {"Image": image, "ModelDataUrl": request.model_data_url, "Environment": environment}
    _call("CreateModel", lambda: session.create_model(request.name, role=options.role, container_defs=definition,
                                                      enable_network_isolation=True))


def start_transform(session, request: TransformRequest, options: SageMakerOptions) -> None:
    """CreateTransformJob for every shard under ``input_uri``; returns once it is accepted."""
    from sagemaker.core.transformer import Transformer

    transformer = Transformer(
        model_name=request.name, instance_count=options.instance_count, instance_type=options.instance_type,
        strategy=options.batch_strategy, assemble_with="None", output_path=request.output_uri, accept=PARQUET,
        max_concurrent_transforms=options.max_concurrent_transforms, max_payload=options.max_payload_mb,
        sagemaker_session=session,
    )
    # SplitType None: Parquet cannot be split by the service; shards are sized for it.
    _call("CreateTransformJob", lambda: transformer.transform(
        request.input_uri, data_type="S3Prefix", content_type=PARQUET, split_type="None",
        job_name=request.name, wait=False, logs=False))


def delete_model(session, name: str) -> None:
    """Remove the run's model; the job keeps what it needs, and models would pile up per run."""
    _call("DeleteModel", lambda: session.delete_model(name))


def wait(client, name: str, timeout_s: float, poll_s: float = POLL_S, sleep: Callable[[float], None] = time.sleep) -> dict:
    """Poll until the job is done; print each status change; returns the last description.

    A Failed job still wrote ``.out`` objects for the shards that succeeded: the caller
    assembles them and turns the rest into error rows. Stopped or a timeout raise JobError.
    """
    started, last = time.monotonic(), None
    while True:
        job = _call("DescribeTransformJob", lambda: client.describe_transform_job(TransformJobName=name))
        status = job["TransformJobStatus"]
        if status != last:
            print(f"sagemaker: transform job {name} {status} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
            last = status
        if status in DONE:
            break
        if time.monotonic() - started > timeout_s:
            raise JobError(f"transform job {name} still {status} after {timeout_s / 60:.0f} min; it keeps running: "
                           "watch it in the console or raise --timeout-minutes")
        sleep(poll_s)
    if status == "Stopped":
        raise JobError(f"transform job {name} was stopped; nothing was committed; re-run the job")
    if status == "Failed":
        print(f"sagemaker: {name} failed ({job.get('FailureReason')}); its unfinished shards become error rows", file=sys.stderr)
    return job


def _call(operation: str, call: Callable[[], object]):
    """Run one API call; AWS errors become one line naming the operation and the fix."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call()
    except ClientError as e:
        error = e.response.get("Error", {})
        raise JobError(f"SageMaker {operation} failed: {error.get('Code')}: {error.get('Message')}; "
                       "check --role, --region and the role's permissions (docs/SAGEMAKER.md)") from e
    except BotoCoreError as e:
        raise JobError(f"SageMaker {operation} failed: {e}; check credentials, --region and the network") from e
