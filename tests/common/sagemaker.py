"""Helpers for the SageMaker tests: a packaged, unpacked model dir and shard bodies."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from job.config import JobConfig
from runners.sagemaker import package
from tests.common.datasets import mixed_rows


def packaged_model_dir(tmp_dir: str, **config) -> str:
    """model.tar.gz built by ``package`` with random weights, unpacked as the container would."""
    tar = package.build_model_tar(JobConfig(input=None, output=None, weights="random", **config), tmp_dir)
    return package.unpack(tar, f"{tmp_dir}/model")


def shard_body(rows: list[tuple[str, bytes]] | None = None) -> bytes:
    """A Parquet shard as ``runners.sagemaker.shard`` writes it (id + image)."""
    rows = rows if rows is not None else mixed_rows(good=2)
    table = pa.table({"id": [i for i, _ in rows], "image": pa.array([d for _, d in rows], pa.binary())})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()
