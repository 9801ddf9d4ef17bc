"""The SageMaker options of ``python -m runners.sagemaker_job`` and the service's limits.

Use ``add_sagemaker_options(parser)`` on the shared parser, then ``options_from_args``:
bad combinations (``MaxConcurrentTransforms x MaxPayloadInMB > 100``, AWS without a role)
stop the job with one line before any work.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from job.cli import uri_argument
from job.errors import JobError
from runners.sagemaker.wheels import DEFAULT_WHEELHOUSE

MAX_PAYLOAD_MB = 100  # Batch Transform's ceiling for MaxPayloadInMB ...
MAX_PAYLOAD_TIMES_CONCURRENCY = 100  # ... and for MaxConcurrentTransforms x MaxPayloadInMB
BATCH_STRATEGIES = ("MultiRecord", "SingleRecord")


@dataclass(frozen=True)
class SageMakerOptions:
    local: bool  # run the transform on this machine against a loopback server
    role: str | None  # IAM role ARN SageMaker assumes; required on AWS
    instance_type: str = "ml.g5.xlarge"  # one A10G: the cheapest current GPU instance for ResNet50
    instance_count: int = 1
    max_payload_mb: int = 6  # Batch Transform's default; shards are cut to fit it
    max_concurrent_transforms: int = 1  # requests in flight per instance
    batch_strategy: str = "MultiRecord"  # with SplitType None each request is one whole shard either way
    model_s3_uri: str | None = None  # where model.tar.gz goes; default: under the staging prefix
    staging_s3_uri: str | None = None  # shards and .out objects; default: <output>/_staging/sagemaker-<run id>/
    region: str | None = None  # default: AWS_REGION / the profile's region
    image_uri: str | None = None  # default: the official PyTorch inference image for the region
    host: str = "127.0.0.1"  # --local server bind address; loopback unless asked
    timeout_minutes: int = 120  # give up waiting for the AWS job (it keeps running; stop it in the console)
    wheelhouse: str = DEFAULT_WHEELHOUSE  # wheels for the image (pyarrow, simplejpeg), downloaded once, shipped in model.tar.gz

    def __post_init__(self) -> None:
        if not 1 <= self.max_payload_mb <= MAX_PAYLOAD_MB:
            raise JobError(f"--max-payload-mb must be between 1 and {MAX_PAYLOAD_MB}, got {self.max_payload_mb}")
        if self.max_concurrent_transforms < 1 or self.instance_count < 1:
            raise JobError("--max-concurrent-transforms and --instance-count must be at least 1")
        if self.max_concurrent_transforms * self.max_payload_mb > MAX_PAYLOAD_TIMES_CONCURRENCY:
            raise JobError(
                f"--max-concurrent-transforms {self.max_concurrent_transforms} x --max-payload-mb {self.max_payload_mb} "
                f"= {self.max_concurrent_transforms * self.max_payload_mb} exceeds SageMaker's limit of "
                f"{MAX_PAYLOAD_TIMES_CONCURRENCY}; lower one of them"
            )
        if self.batch_strategy not in BATCH_STRATEGIES:
            raise JobError(f"--batch-strategy must be one of {', '.join(BATCH_STRATEGIES)}, got {self.batch_strategy!r}")
        if not self.local and not self.role:
            raise JobError("--role ARN is required on AWS (the IAM role SageMaker assumes); or pass --local")


def add_sagemaker_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sagemaker")
    group.add_argument("--local", action="store_true", help="run the transform here against a loopback server, not on AWS")
    group.add_argument("--role", help="IAM role ARN SageMaker assumes (required on AWS; see docs/SAGEMAKER.md)")
    group.add_argument("--instance-type", default="ml.g5.xlarge", help="transform instance type")
    group.add_argument("--instance-count", type=int, default=1, help="transform instances")
    group.add_argument("--max-payload-mb", type=int, default=6, help="MaxPayloadInMB, 1-100: the shard size cap")
    group.add_argument("--max-concurrent-transforms", type=int, default=1, help="requests in flight per instance")
    group.add_argument("--batch-strategy", default="MultiRecord", help="MultiRecord | SingleRecord")
    group.add_argument("--model-s3-uri", type=uri_argument, help="s3:// object for model.tar.gz; not given: <staging>/model.tar.gz")
    group.add_argument("--staging-s3-uri", type=uri_argument, help="prefix for shards and .out objects; not given: <output>/_staging/sagemaker-<run id>/")
    group.add_argument("--region", help="AWS region of the job; not given: AWS_REGION or the profile's")
    group.add_argument("--image-uri", help="serving image; not given: the official PyTorch inference image for the region")
    group.add_argument("--host", default="127.0.0.1", help="--local server bind address; 127.0.0.1 listens on loopback only")
    group.add_argument("--timeout-minutes", type=int, default=120, help="stop waiting for the AWS job after this")
    group.add_argument("--wheelhouse", default=DEFAULT_WHEELHOUSE,
                       help="wheels the serving image lacks (pyarrow, simplejpeg) for its Python; filled by pip download when empty")


def options_from_args(args: argparse.Namespace) -> SageMakerOptions:
    return SageMakerOptions(
        local=args.local, role=args.role, instance_type=args.instance_type, instance_count=args.instance_count,
        max_payload_mb=args.max_payload_mb, max_concurrent_transforms=args.max_concurrent_transforms,
        batch_strategy=args.batch_strategy, model_s3_uri=args.model_s3_uri, staging_s3_uri=args.staging_s3_uri,
        region=args.region, image_uri=args.image_uri, host=args.host, timeout_minutes=args.timeout_minutes,
        wheelhouse=args.wheelhouse,
    )
