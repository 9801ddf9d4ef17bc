"""Image objects as --input on Spark: a local folder and the S3 server, one Spark session for the module."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import object_scenarios as scenarios


@pytest.fixture(scope="module", autouse=True)
def spark():
    with local_spark() as session:
        yield session


def test_objects_run_as_they_lie_and_a_night_redoes_only_their_groups(data_root):
    root, endpoint = data_root
    scenarios.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(spark_job.main, root, endpoint)
