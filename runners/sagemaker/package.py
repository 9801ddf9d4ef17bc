"""Build model.tar.gz as the SageMaker PyTorch container expects it, and upload it.

Layout (the container unpacks it into /opt/ml/model)::

    model.pth            the ResNet50 state dict (absent for --weights random)
    serving.json         the job options the handler needs (image column, topk, ...)
    code/handler.py      runners/sagemaker/serving/handler.py: model_fn ... output_fn
    code/job/ code/preprocess/ code/inference/ code/storage/   the shared core, whole
    code/runners/sagemaker/serving/   the handler's own package
    code/requirements.txt, code/wheels/   for AWS only: what the image lacks (pyarrow), as
                         wheels for its Python, installed at start-up with no index

Use ``build_model_tar`` once per job, before the transform; ``upload`` puts it on S3. The
model's container variables (``container.environment()``) name ``code/handler.py``.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch

import inference
import job
import preprocess
import runners
import storage
from inference import load_model
from job.config import JobConfig
from runners.sagemaker import wheels as serving_wheels
from runners.sagemaker.container import ENTRY_POINT
from runners.sagemaker.serving import handler
from storage import Location, storage_errors

# The core packages the handler runs, shipped whole: the engine-neutral job imports nothing
# else of ours (a test holds it to that), so no list of modules can fall behind it.
CORE_PACKAGES = (job, preprocess, inference, storage)
SERVING_FIELDS = ("image_column", "raw_shape", "topk", "max_pixels", "precision", "batch_size", "compile")


def serving_options(config: JobConfig) -> dict:
    """What the handler needs to know about the job; weights become a file, or "random"."""
    options = {name: getattr(config, name) for name in SERVING_FIELDS}
    options["weights"] = "random" if config.weights == "random" else handler.WEIGHTS_FILE
    return options


def build_model_tar(config: JobConfig, directory: str, wheels: Sequence[Path] = ()) -> str:
    """Write ``directory/model.tar.gz``; returns its path.

    ``wheels`` (from ``wheels.fetch``) go into ``code/wheels/`` with the requirements.txt that
    installs them offline; without them there is no requirements.txt (``--local`` runs here).
    """
    path = os.path.join(directory, "model.tar.gz")
    with tempfile.TemporaryDirectory(prefix="model-") as tmp, tarfile.open(path, "w:gz") as tar:
        if config.weights != "random":
            weights = os.path.join(tmp, handler.WEIGHTS_FILE)
            torch.save(load_model(config.weights, s3_endpoint_url=config.s3_endpoint_url).module.state_dict(), weights)
            tar.add(weights, handler.WEIGHTS_FILE)
        _add_bytes(tar, handler.SERVING_CONFIG, json.dumps(serving_options(config), indent=2).encode())
        if wheels:
            _add_bytes(tar, "code/requirements.txt", serving_wheels.requirements_txt(list(wheels)).encode())
            for wheel in wheels:
                tar.add(wheel, f"code/{serving_wheels.WHEELS_DIR}/{Path(wheel).name}")
        tar.add(handler.__file__, f"code/{ENTRY_POINT}")
        for package in CORE_PACKAGES:
            tar.add(os.path.dirname(package.__file__), f"code/{package.__name__}", filter=_no_caches)
        runners_dir = os.path.dirname(runners.__file__)
        # The handler imports runners.sagemaker.serving.codecs; ship just that package (the
        # engines beside it import Ray, Spark or boto3, which the container has no use for).
        tar.add(os.path.join(runners_dir, "__init__.py"), "code/runners/__init__.py")
        tar.add(os.path.join(runners_dir, "sagemaker", "__init__.py"), "code/runners/sagemaker/__init__.py")
        tar.add(os.path.dirname(handler.__file__), "code/runners/sagemaker/serving", filter=_no_caches)
    return path


def unpack(tar_path: str, model_dir: str) -> str:
    """Unpack model.tar.gz as the container does; returns ``model_dir``."""
    with tarfile.open(tar_path) as tar:
        tar.extractall(model_dir, filter="data")
    return model_dir


def upload(tar_path: str, location: Location) -> str:
    """Copy model.tar.gz to ``location`` (an object path); returns its URI."""
    with storage_errors(location.uri), open(tar_path, "rb") as src, location.filesystem.open_output_stream(location.path) as out:
        while chunk := src.read(8 * 1024 * 1024):
            out.write(chunk)
    return location.uri


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _no_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "__pycache__" in info.name or info.name.endswith(".pyc") else info
