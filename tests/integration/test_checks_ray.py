"""The Ray job refuses a bad dataset and a second concurrent run before any work (scenarios in checks_scenarios)."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import checks_scenarios as scenarios

pytestmark = pytest.mark.usefixtures("local_ray")  # one local Ray for the module (tests/conftest.py)
SUBPROCESS = ("runners.ray_job", "--address", "local")  # its own Ray, never a cluster someone else started


def test_repeated_ids_are_refused_before_any_work(data_root, capsys):
    scenarios.repeated_ids_are_refused_before_any_work(ray_job.main, *data_root, capsys)


def test_a_file_without_the_id_column_is_refused_before_any_work(data_root, capsys):
    scenarios.a_file_without_the_id_column_is_refused_before_any_work(ray_job.main, *data_root, capsys)


def test_partition_folders_and_writer_markers_run(tmp_path, capsys):
    scenarios.partition_folders_and_writer_markers_run(ray_job.main, str(tmp_path), None, capsys)


def test_a_second_concurrent_run_is_refused_and_the_first_finishes_alone(s3_bucket, s3_env, capsys):
    scenarios.concurrent_runs_into_one_prefix(ray_job.main, SUBPROCESS, f"s3://{s3_bucket}", s3_env, capsys)


def test_a_crashed_runs_lease_is_taken_over_by_resume(s3_bucket, s3_env, capsys):
    scenarios.a_crashed_runs_lease_is_taken_over_by_resume(ray_job.main, f"s3://{s3_bucket}", s3_env, capsys)
