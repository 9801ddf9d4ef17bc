"""Shared fixtures: a real S3 server (moto) on loopback, and small real image datasets."""

from __future__ import annotations

import os
import re
import uuid

import boto3
import pytest

from benchmarks.harness.s3 import s3_server_env, start_s3_server

# Fake credentials for the loopback S3 server, set before any test starts Ray so that Ray's
# worker processes inherit them; AWS_EC2_METADATA_DISABLED keeps the SDK off the network.
os.environ.update(s3_server_env())


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """moto's S3 server on 127.0.0.1 (a random free port), shared by the whole session."""
    server, endpoint = start_s3_server()
    yield endpoint
    server.stop()


@pytest.fixture()
def s3_env(s3_endpoint) -> str:
    """The moto server's endpoint URL (its credentials are in the environment)."""
    return s3_endpoint


@pytest.fixture()
def s3_bucket(s3_env, request) -> str:
    """A fresh bucket on the moto server, unique per test even when two modules share a test name."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40]
    name = f"t-{stem}-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_env).create_bucket(Bucket=name)
    return name


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where CUDA is (``-m gpu`` on a GPU machine); elsewhere they skip."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray with 2 CPUs for a module; such a module says ``pytestmark = pytest.mark.usefixtures("local_ray")``."""
    import ray  # here, not at the top: most test modules never start Ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(params=["local", "s3"])
def data_root(request, tmp_path) -> tuple[str, str | None]:
    """(root URI, S3 endpoint or None) for a test's input and output."""
    if request.param == "local":
        return str(tmp_path), None
    return f"s3://{request.getfixturevalue('s3_bucket')}", request.getfixturevalue("s3_env")
