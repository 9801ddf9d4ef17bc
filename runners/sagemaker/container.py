"""The one SageMaker serving container every path uses: image, Python, and its environment.

Use ``image_uri`` for the AWS PyTorch inference image (looked up by the SageMaker Python SDK,
offline), ``environment(max_payload_mb)`` for the container variables of a model, and
``request_limit``/``response_limit`` for the body sizes a container with those variables
accepts. The runner's per-run models and ``--local`` both use these values, so a local run
refuses exactly the requests the container on AWS would (``tests/deploy`` holds terraform's
role and image to the same module).
"""

from __future__ import annotations

from collections.abc import Mapping

from job.errors import JobError
from runners.sagemaker.serving.codecs import PARQUET

# The AWS Deep Learning Container "pytorch-inference" 2.6.0: torch 2.6 (pyproject's floor
# is 2.4), torchvision 0.21, Python 3.12, sagemaker-pytorch-inference 2.0.25. Newest
# PyTorch inference image the SDK knows. terraform/variables.tf names the same tag.
FRAMEWORK_VERSION = "2.6.0"
PY_VERSION = "py312"
# What the vendored wheels are built for: the image's CPython on Ubuntu 22.04 (glibc 2.35), x86_64.
PYTHON_VERSION = "3.12"
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")

# Our handler module inside model.tar.gz. Not inference.py: that name would shadow our
# `inference` package, and the toolkit would fall back to its TorchScript-only loader.
ENTRY_POINT = "handler.py"
CODE_DIR = "/opt/ml/model/code"

MB = 1024 * 1024  # Batch Transform's MaxPayloadInMB counts MiB, as the shards do
# TorchServe 0.12 (the 2.6.0 image) refuses bodies above this many bytes unless told otherwise
# (ConfigManager's max_request_size / max_response_size): a 413 for any shard over 6.25 MiB.
TORCHSERVE_DEFAULT_LIMIT = 6_553_500
# Its largest setting (a Java int). A response is the predictions of a request that was
# accepted; Batch Transform sets no cap on it, so the container should never refuse one
# (embeddings of many small images can outweigh the request).
TORCHSERVE_MAX_LIMIT = 2**31 - 1
# The toolkit's default-ts.properties sets enable_envvars_config=true, so TorchServe takes
# these from the container's environment (TS_<PROPERTY>); the toolkit itself passes
# SAGEMAKER_MAX_PAYLOAD_IN_MB on to nothing under TorchServe.
REQUEST_LIMIT_VARIABLE = "TS_MAX_REQUEST_SIZE"
RESPONSE_LIMIT_VARIABLE = "TS_MAX_RESPONSE_SIZE"


def environment(max_payload_mb: int) -> dict[str, str]:
    """The container variables of a model that serves our archive to a transform job whose
    MaxPayloadInMB is ``max_payload_mb``."""
    return {
        "SAGEMAKER_PROGRAM": ENTRY_POINT,
        "SAGEMAKER_SUBMIT_DIRECTORY": CODE_DIR,
        # The toolkit replaces a missing Accept (or */*) with this; its default,
        # application/json, is a type our handler cannot write, so every such request would 500.
        "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT": PARQUET,
        # Whatever the job may send, TorchServe accepts: the shards are cut to MaxPayloadInMB.
        REQUEST_LIMIT_VARIABLE: str(max_payload_mb * MB),
        RESPONSE_LIMIT_VARIABLE: str(TORCHSERVE_MAX_LIMIT),
    }


def request_limit(container_env: Mapping[str, str]) -> int:
    """The largest request body, in bytes, TorchServe accepts in a container with these variables."""
    return _limit(container_env, REQUEST_LIMIT_VARIABLE)


def response_limit(container_env: Mapping[str, str]) -> int:
    """The largest response body, in bytes, TorchServe returns in a container with these variables."""
    return _limit(container_env, RESPONSE_LIMIT_VARIABLE)


def _limit(container_env: Mapping[str, str], variable: str) -> int:
    value = container_env.get(variable, str(TORCHSERVE_DEFAULT_LIMIT))
    try:
        return int(value)
    except ValueError as e:
        raise JobError(f"container variable {variable}={value!r} is not a number of bytes") from e


def image_uri(region: str, instance_type: str) -> str:
    """The PyTorch inference image for ``region`` (the GPU build on ml.g*/ml.p* instances)."""
    try:
        from sagemaker.core import image_uris  # the [sagemaker] extra; only the AWS path needs it
    except ImportError as e:
        raise JobError("the AWS path needs the SageMaker SDK: pip install 'streaming-batch-inference[sagemaker]'") from e
    try:
        return image_uris.retrieve("pytorch", region, version=FRAMEWORK_VERSION, py_version=PY_VERSION,
                                   instance_type=instance_type, image_scope="inference")
    except ValueError as e:
        raise JobError(f"no PyTorch {FRAMEWORK_VERSION} inference image for region {region!r} and "
                       f"{instance_type!r} ({e}); pass --image-uri") from e

