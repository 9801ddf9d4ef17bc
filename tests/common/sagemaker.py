"""Helpers for the SageMaker tests: packaged model dirs, shard bodies, and wheelhouses."""

from __future__ import annotations

import io
import json
import os
import zipfile
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from job.config import JobConfig
from job.execution import Execution
from job.output.rows import output_schema
from runners.sagemaker import package
from runners.sagemaker.serving import handler
from runners.sagemaker.wheels import SERVING_PACKAGES
from tests.common.datasets import mixed_rows
from tests.common.plans import cpu_execution

# The tag of a wheel for the serving image (CPython 3.12, glibc 2.28+, x86_64).
IMAGE_WHEEL_TAG = "cp312-cp312-manylinux_2_28_x86_64"


def packaged_model_dir(tmp_dir: str, **config) -> str:
    """model.tar.gz built by ``package`` with random weights, unpacked as the container would."""
    config = JobConfig(input=None, output=None, weights="random", **config)
    tar = package.build_model_tar(config, cpu_execution(config), tmp_dir)
    return package.unpack(tar, f"{tmp_dir}/model")


def archived_schema(model_dir: str) -> pa.Schema:
    """The output schema of the job whose plan an unpacked archive carries: what its handler must answer in."""
    with open(os.path.join(model_dir, handler.SERVING_CONFIG)) as f:
        return output_schema(Execution.from_dict(json.load(f)["execution"]))


def shard_body(rows: list[tuple[str, bytes]] | None = None) -> bytes:
    """A Parquet shard as ``runners.sagemaker.shard`` writes it (id + image)."""
    rows = rows if rows is not None else mixed_rows(good=2)
    table = pa.table({"id": [i for i, _ in rows], "image": pa.array([d for _, d in rows], pa.binary())})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def shard_of_size(nbytes: int) -> bytes:
    """A Parquet shard of about ``nbytes``: one row of random (so incompressible, and undecodable)
    image bytes. It answers with one error row, so a request of any size costs no model time."""
    table = pa.table({"id": ["big"], "image": pa.array([os.urandom(nbytes)], pa.binary())})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none")
    return sink.getvalue()


def write_wheel(directory: Path, name: str, wheel_version: str, tag: str) -> Path:
    """A minimal, valid wheel file: what pip needs to resolve and install it, and no code.

    Stands in for the 40 MB pyarrow wheel: the tests check how the wheel is found and
    installed (real pip), not pyarrow itself.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{wheel_version}-{tag}.whl"
    info = f"{name}-{wheel_version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {wheel_version}\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {tag}\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
    return path


def image_wheelhouse(directory: Path) -> Path:
    """A wheelhouse holding a wheel of each serving package at this machine's version, built for the image."""
    for name in SERVING_PACKAGES:
        write_wheel(directory, name, version(name), IMAGE_WHEEL_TAG)
    return directory
