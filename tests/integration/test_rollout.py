"""A new model rolled out night by night, on the local engine: the plain folder, Delta and Iceberg (local paths),
Delta on the S3 server, and a night killed mid-rollout (tests/integration/rollout_scenarios.py)."""

from __future__ import annotations

import pytest

from runners import local_job
from tests.integration import rollout_scenarios as rollout

LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


@pytest.mark.parametrize("table_format", ["parquet", "delta", "iceberg"])
def test_a_new_model_is_rolled_out_a_few_files_a_night(table_format, tmp_path):
    rollout.a_rollout_night_by_night(main, str(tmp_path), None, table_format, 7)


@pytest.mark.slow  # CI: the rollout on S3 is Spark's, on Iceberg (test_incremental_spark.py)
def test_a_rollout_on_s3(s3_bucket, s3_env):
    rollout.a_rollout_night_by_night(main, f"s3://{s3_bucket}", s3_env, "delta", 10)


# CI: Delta's; a stopped plain-folder night's parts are adopted as any night's (test_bad_night.py)
@pytest.mark.parametrize("table_format", [pytest.param("parquet", marks=pytest.mark.slow), "delta"])
def test_a_night_killed_mid_rollout_is_finished_by_the_next(table_format, tmp_path):
    rollout.a_night_killed_mid_rollout_is_finished_by_the_next(str(tmp_path), None, table_format, 5)


def test_other_writers_during_a_rollout_keep_what_they_deleted_deleted(tmp_path):
    rollout.other_writers_during_a_rollout(main, str(tmp_path), None)
