"""Image objects as --input on Spark, on the S3 server (the local engine covers a local folder too), one Spark session."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import object_scenarios as scenarios


@pytest.fixture(scope="module", autouse=True)
def spark():
    with local_spark() as session:
        yield session


def test_objects_on_s3_run_as_they_lie_and_a_night_redoes_only_their_groups(s3_bucket, s3_env):
    scenarios.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(spark_job.main, f"s3://{s3_bucket}", s3_env)
