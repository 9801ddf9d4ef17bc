"""Nights on Ray, one Ray for the module: --incremental over a growing input (Parquet files, and image objects
on the S3 server) keeps the table equal to a fresh full run; bad nights end in the fresh run's table.

What a night keeps, redoes and commits is decided on the driver whatever the engine (``job.night.plan``,
``job.night.commit``); the engine only runs the files it is given. So the scenarios whose outcome is the driver's
run here only where an engine's part of them differs: a replaced file redone on --resume runs on Spark and SageMaker
(test_incremental_spark.py, test_incremental_sagemaker.py), Delta and Iceberg tables on the local engine and Spark
(test_tables.py, test_incremental_spark.py)."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import bad_night_scenarios as bad_nights
from tests.integration import incremental_scenarios as scenarios
from tests.integration import object_scenarios as objects
from tests.integration import privacy_scenarios as privacy
from tests.integration import rollout_scenarios as rollout
from tests.integration import shared_table_scenarios as shared

pytestmark = pytest.mark.usefixtures("local_ray")


def test_nightly_runs_equal_a_fresh_full_run(tmp_path):
    scenarios.nightly_runs_equal_a_fresh_full_run(ray_job.main, str(tmp_path), None)


@pytest.mark.slow  # CI: the local engine's run of it (test_bad_night.py), local and S3
def test_empty_files_are_files_of_the_table(tmp_path):
    """Bad nights are decided on the driver (job.night.plan) and run on the local engine, local and S3
    (tests/integration/test_bad_night.py); this one runs on Ray too: nights whose files without rows get their parts
    from the driver (job.night.finish), never from the engine, beside the files Ray runs."""
    bad_nights.empty_files_are_files_of_the_table(ray_job.main, str(tmp_path), None)


@pytest.mark.slow  # CI: the local engine's (test_bad_night.py), local and S3
def test_an_input_file_deleted_mid_run_stops_it_in_one_line(tmp_path):
    bad_nights.an_input_file_deleted_mid_run(ray_job.ENGINE, str(tmp_path), None)


@pytest.mark.slow  # CI: objects on Ray in the DELETE-by-key test below, and this scenario on S3 on the local engine and Spark
def test_objects_on_s3_run_as_they_lie_and_a_night_redoes_only_their_groups(s3_bucket, s3_env):
    objects.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(ray_job.main, f"s3://{s3_bucket}", s3_env)


@pytest.mark.slow  # CI: the local engine's, local and S3 (test_shared_table.py), and Spark's DELETE during a night
def test_a_delta_night_on_ray_keeps_another_writers_compaction_made_while_it_ran(tmp_path, monkeypatch):
    """Databricks' OPTIMIZE commits while the Ray night runs: the night's commit rebases over it, every id once."""
    shared.nights_around_another_writer(ray_job.main, str(tmp_path), None, "compact", True, monkeypatch)


@pytest.mark.slow  # CI: the Iceberg night below on Ray, and the Delta one on the local engine (disk and S3) and Spark
def test_a_delete_after_a_compaction_then_a_changed_file_on_ray(tmp_path):
    privacy.a_delete_after_a_compaction_then_a_changed_file(ray_job.main, str(tmp_path), None, "delta")


@pytest.mark.slow  # CI: Spark's on S3 and the local engine's, local and S3 (the withheld keys are the driver's)
def test_an_image_objects_row_deleted_by_its_key_stays_deleted_on_ray(tmp_path):
    privacy.an_object_deleted_by_key_stays_deleted(ray_job.main, str(tmp_path), None, "delta")


def test_iceberg_nights_on_ray_after_a_compaction_and_a_delete(tmp_path):
    privacy.a_delete_after_a_compaction_then_a_changed_file(ray_job.main, str(tmp_path), None, "iceberg")


@pytest.mark.slow  # CI: the local engine's, Spark's and SageMaker's (the plan gives the engine its files)
def test_a_new_model_rolled_out_night_by_night_on_ray(tmp_path):
    rollout.a_rollout_night_by_night(ray_job.main, str(tmp_path), None, "delta", 12)
