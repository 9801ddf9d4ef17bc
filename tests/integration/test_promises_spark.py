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


def test_a_dry_run_on_spark_announces_exactly_what_the_night_scores(s3_bucket, s3_env):
    """--dry-run starts no engine: what it announces is held to the next night's on Spark (dry_run_scenarios.py)."""
    from tests.integration import dry_run_scenarios as dry

    dry.a_dry_run_announces_what_the_night_scores(spark_job.main, f"s3://{s3_bucket}", s3_env, "iceberg")
