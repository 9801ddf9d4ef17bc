"""The Ray job refuses a bad dataset and a second concurrent run before any work, and stops in one line on bad data
only the run can meet (scenarios in checks_scenarios and bad_data_scenarios)."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import bad_data_scenarios as bad_data
from tests.integration import checks_scenarios as scenarios

pytestmark = pytest.mark.usefixtures("local_ray")  # one local Ray for the module (tests/conftest.py)
SUBPROCESS = ("runners.ray_job", "--address", "local")  # its own Ray, never a cluster someone else started


def test_repeated_ids_are_refused_before_any_work(data_root, capsys):
    scenarios.repeated_ids_are_refused_before_any_work(ray_job.main, *data_root, capsys)


def test_a_file_without_the_id_column_is_refused_before_any_work(data_root, capsys):
    scenarios.a_file_without_the_id_column_is_refused_before_any_work(ray_job.main, *data_root, capsys)


@pytest.mark.slow  # CI: Spark's, on S3
def test_partition_folders_and_writer_markers_run(tmp_path, capsys):
    scenarios.partition_folders_and_writer_markers_run(ray_job.main, str(tmp_path), None, capsys)


@pytest.mark.slow  # CI: Spark's, on S3 too (the lease is the driver's, whatever the engine)
def test_a_second_concurrent_run_is_refused_and_the_first_finishes_alone(s3_bucket, s3_env, capsys):
    scenarios.concurrent_runs_into_one_prefix(ray_job.main, SUBPROCESS, f"s3://{s3_bucket}", s3_env, capsys)


@pytest.mark.slow  # CI: Spark's (the lease is the driver's, whatever the engine)
def test_a_crashed_runs_lease_is_taken_over_by_resume(s3_bucket, s3_env, capsys):
    scenarios.a_crashed_runs_lease_is_taken_over_by_resume(ray_job.main, f"s3://{s3_bucket}", s3_env, capsys)


def test_a_null_id_is_refused_before_any_work(data_root, capsys):
    bad_data.a_null_id_is_refused_before_any_work(ray_job.main, *data_root, capsys)


@pytest.mark.slow  # CI: Spark's, on S3
def test_a_null_id_the_footers_do_not_count_stops_the_run(tmp_path, capfd):
    bad_data.a_null_id_the_footers_do_not_count_stops_the_run(ray_job.main, str(tmp_path), None, capfd)


@pytest.mark.slow  # CI: Spark's
def test_repeated_ids_without_the_id_check_are_named_at_the_end(s3_bucket, s3_env, capfd):
    bad_data.repeated_ids_without_the_id_check_are_named_at_the_end(ray_job.main, f"s3://{s3_bucket}", s3_env, capfd)


@pytest.mark.slow  # CI: Spark's
def test_a_damaged_page_stops_the_run_and_resume_finishes(s3_bucket, s3_env, capfd):
    bad_data.a_damaged_page_stops_the_run_and_resume_finishes(ray_job.main, f"s3://{s3_bucket}", s3_env, capfd)


def test_an_output_inside_the_input_is_refused_up_front(data_root, capsys):
    bad_data.an_output_inside_the_input_is_refused_up_front(ray_job.main, *data_root, capsys)
