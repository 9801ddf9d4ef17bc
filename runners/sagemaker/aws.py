"""The real service: CreateModel, CreateTransformJob, and wait for it, with boto3.

Use for runs without ``--local``. The shards and model.tar.gz must already be on S3
(``shard``, ``package``); afterwards ``assemble`` reads the ``.out`` objects. boto3 and not
the ``sagemaker`` SDK: three API calls do not justify the 3.x umbrella package, and boto3 is
what the SDK calls underneath. The client honours ``AWS_ENDPOINT_URL_SAGEMAKER`` /
``AWS_ENDPOINT_URL`` like every AWS SDK (tests point it at moto).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from job.errors import JobError
from runners.sagemaker.options import SageMakerOptions
from runners.sagemaker.package import ENTRY_POINT
from runners.sagemaker.serving.codecs import PARQUET

# The official PyTorch inference images (AWS Deep Learning Containers) in the regions where
# account 763104351884 hosts them; other regions: pass --image-uri.
DLC_ACCOUNT = "763104351884"
DLC_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1", "eu-west-2", "eu-west-3",
    "eu-central-1", "eu-north-1", "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2",
    "ap-south-1", "sa-east-1",
)
# torch 2.3 / py3.11: a current image that carries torchvision and pillow; pyarrow comes from code/requirements.txt.
DLC_TAGS = {"gpu": "2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker", "cpu": "2.3.0-cpu-py311-ubuntu20.04-sagemaker"}
GPU_FAMILIES = ("ml.g", "ml.p")
POLL_S = 30  # DescribeTransformJob is throttled per account; every 30 s is plenty for jobs of minutes
DONE = ("Completed", "Failed", "Stopped")


def image_uri(region: str, instance_type: str) -> str:
    """The PyTorch inference image for ``region`` (GPU image on ml.g*/ml.p* instances)."""
    if region not in DLC_REGIONS:
        raise JobError(f"no built-in PyTorch inference image for region {region!r}; pass --image-uri")
    flavour = "gpu" if instance_type.startswith(GPU_FAMILIES) else "cpu"
    return f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com/pytorch-inference:{DLC_TAGS[flavour]}"


def sagemaker_client(region: str | None):
    """A SageMaker client for ``region`` (else the environment's); JobError without a region."""
    try:
        import boto3  # the [sagemaker] extra; only the AWS path needs it
        from botocore.exceptions import NoRegionError
    except ImportError as e:
        raise JobError("the AWS path needs boto3: pip install 'streaming-batch-inference[sagemaker]'") from e
    try:
        return boto3.client("sagemaker", region_name=region)
    except NoRegionError as e:
        raise JobError("no AWS region: pass --region or set AWS_REGION") from e


@dataclass(frozen=True)
class TransformRequest:
    name: str  # model and transform job name (unique per run)
    model_data_url: str  # s3://.../model.tar.gz
    input_uri: str  # s3:// prefix of the shards
    output_uri: str  # s3:// prefix for the .out objects


def create_model(client, request: TransformRequest, options: SageMakerOptions, image: str) -> None:
    environment = {
        "SAGEMAKER_PROGRAM": ENTRY_POINT,  # our handler, not the default inference.py
        "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code",
        "SAGEMAKER_REGION": client.meta.region_name,
    }
    container = {"Image": image, "ModelDataUrl": request.model_data_url, "Environment": environment}
    _call("CreateModel", lambda: client.create_model(ModelName=request.name, PrimaryContainer=container, ExecutionRoleArn=options.role))


def create_transform_job(client, request: TransformRequest, options: SageMakerOptions) -> None:
    _call("CreateTransformJob", lambda: client.create_transform_job(
        TransformJobName=request.name,
        ModelName=request.name,
        MaxConcurrentTransforms=options.max_concurrent_transforms,
        MaxPayloadInMB=options.max_payload_mb,
        BatchStrategy=options.batch_strategy,
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": request.input_uri}},
            "ContentType": PARQUET,
            "SplitType": "None",  # Parquet cannot be split by the service; shards are sized for it
            "CompressionType": "None",
        },
        TransformOutput={"S3OutputPath": request.output_uri, "Accept": PARQUET, "AssembleWith": "None"},
        TransformResources={"InstanceType": options.instance_type, "InstanceCount": options.instance_count},
    ))


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


def _call(operation: str, call: Callable[[], dict]) -> dict:
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
