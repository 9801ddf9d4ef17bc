"""The one SageMaker serving container every path uses: image, Python, and its environment.

Use ``image_uri`` for the AWS PyTorch inference image (looked up by the SageMaker Python SDK,
offline), and ``environment()`` for the container variables of a model. The runner's
per-run models, terraform's ``aws_sagemaker_model`` and ``--local`` all use these values;
``tests/deploy`` holds terraform to them.
"""

from __future__ import annotations

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


def environment() -> dict[str, str]:
    """The container variables of a model that serves our archive."""
    return {
        "SAGEMAKER_PROGRAM": ENTRY_POINT,
        "SAGEMAKER_SUBMIT_DIRECTORY": CODE_DIR,
        # The toolkit replaces a missing Accept (or */*) with this; its default,
        # application/json, is a type our handler cannot write, so every such request would 500.
        "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT": PARQUET,
    }


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

