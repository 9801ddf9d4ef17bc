"""The Spark job refuses a bad dataset and a second concurrent run before any work (scenarios in checks_scenarios)."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import checks_scenarios as scenarios

SUBPROCESS = ("runners.spark_job", "--master", "local[2]")


@pytest.fixture(scope="module", autouse=True)
def spark():
    """One Spark for the module: the in-process runs use it; the subprocess run starts its own."""
    with local_spark() as session:
        yield session


def test_repeated_ids_are_refused_before_any_work(data_root, capsys):
    scenarios.repeated_ids_are_refused_before_any_work(spark_job.main, *data_root, capsys)


def test_a_file_without_the_id_column_is_refused_before_any_work(data_root, capsys):
    scenarios.a_file_without_the_id_column_is_refused_before_any_work(spark_job.main, *data_root, capsys)


def test_partition_folders_and_writer_markers_run(s3_bucket, s3_env, capsys):
    scenarios.partition_folders_and_writer_markers_run(spark_job.main, f"s3://{s3_bucket}", s3_env, capsys)


def test_a_second_concurrent_run_is_refused_and_the_first_finishes_alone(tmp_path, capsys):
    scenarios.concurrent_runs_into_one_prefix(spark_job.main, SUBPROCESS, str(tmp_path), None, capsys)


def test_a_crashed_runs_lease_is_taken_over_by_resume(tmp_path, capsys):
    scenarios.a_crashed_runs_lease_is_taken_over_by_resume(spark_job.main, str(tmp_path), None, capsys)
