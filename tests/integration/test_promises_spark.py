"""The first four of a night's promises on Spark, input and output on S3 (tests/integration/promises_scenarios.py):
the nights that die run as child processes, each with a Spark of its own; the others on this module's session."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import promises_scenarios as promises


@pytest.fixture(scope="module", autouse=True)
def spark():
    with local_spark() as session:
        yield session


def test_the_first_four_promises_on_spark(s3_bucket, s3_env, tmp_path):
    promises.the_first_four_on_an_engine(spark_job.main, "runners.spark_job", f"s3://{s3_bucket}", s3_env, "delta",
                                         tmp_path)
