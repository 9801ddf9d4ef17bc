"""Nights on Ray, one Ray for the module: --incremental over a growing input (Parquet files, and image objects
on the S3 server) keeps the table equal to a fresh full run; bad nights end in the fresh run's table."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import bad_night_scenarios as bad_nights
from tests.integration import incremental_scenarios as scenarios
from tests.integration import object_scenarios as objects
from tests.integration import table_scenarios as tables

pytestmark = pytest.mark.usefixtures("local_ray")


def test_nightly_runs_equal_a_fresh_full_run(tmp_path):
    scenarios.nightly_runs_equal_a_fresh_full_run(ray_job.main, str(tmp_path), None)


def test_a_replaced_input_file_is_redone_on_resume(tmp_path):
    scenarios.a_replaced_input_file_is_redone_on_resume(ray_job.main, str(tmp_path), None)


def test_empty_files_are_files_of_the_table(tmp_path):
    """The one bad night whose outcome is the engine's (Ray Data reads a file with no rows and must write its empty
    part); a stopped night and a part deleted by hand are decided in job.output.night, before any engine runs, and
    tests/integration/test_bad_night.py runs them on the local engine, on a local path and on S3."""
    bad_nights.empty_files_are_files_of_the_table(ray_job.main, str(tmp_path), None)


def test_an_input_file_deleted_mid_run_stops_it_in_one_line(tmp_path):
    bad_nights.an_input_file_deleted_mid_run(ray_job.ENGINE, str(tmp_path), None)


def test_delta_and_iceberg_tables_hold_the_parquet_folders_rows(tmp_path):
    scenarios.write_night(f"{tmp_path}/in", None, 0, 2)
    tables.delta_and_iceberg_hold_the_parquet_folders_rows(ray_job.main, str(tmp_path), None)


def test_objects_on_s3_run_as_they_lie_and_a_night_redoes_only_their_groups(s3_bucket, s3_env):
    objects.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(ray_job.main, f"s3://{s3_bucket}", s3_env)
