"""Nights on Spark, input and output on S3, one Spark session: --incremental over Parquet files and over
image objects keeps the table equal to a fresh full run; Delta and Iceberg hold the folder's rows."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import incremental_scenarios as scenarios
from tests.integration import object_scenarios as objects
from tests.integration import privacy_scenarios as privacy
from tests.integration import rollout_scenarios as rollout
from tests.integration import shared_table_scenarios as shared
from tests.integration import table_scenarios as tables


@pytest.fixture(scope="module", autouse=True)
def spark():
    with local_spark() as session:
        yield session


def test_nightly_runs_equal_a_fresh_full_run_on_s3(s3_bucket, s3_env):
    scenarios.nightly_runs_equal_a_fresh_full_run(spark_job.main, f"s3://{s3_bucket}", s3_env)


def test_a_replaced_input_file_is_redone_on_resume_on_s3(s3_bucket, s3_env):
    scenarios.a_replaced_input_file_is_redone_on_resume(spark_job.main, f"s3://{s3_bucket}", s3_env)


def test_delta_and_iceberg_tables_on_s3_hold_the_parquet_folders_rows(s3_bucket, s3_env):
    scenarios.write_night(f"s3://{s3_bucket}/in", s3_env, 0, 2)
    tables.delta_and_iceberg_hold_the_parquet_folders_rows(spark_job.main, f"s3://{s3_bucket}", s3_env)


def test_objects_on_s3_run_as_they_lie_and_a_night_redoes_only_their_groups(s3_bucket, s3_env):
    objects.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(spark_job.main, f"s3://{s3_bucket}", s3_env)


def test_a_delta_night_on_spark_keeps_another_writers_delete_made_while_it_ran(s3_bucket, s3_env, monkeypatch):
    """A privacy request's DELETE commits while the Spark night runs: it stays deleted, the night's rows are right."""
    shared.nights_around_another_writer(spark_job.main, f"s3://{s3_bucket}", s3_env, "delete", True, monkeypatch)


def test_a_delete_after_a_compaction_then_a_changed_file_on_spark(s3_bucket, s3_env):
    privacy.a_delete_after_a_compaction_then_a_changed_file(spark_job.main, f"s3://{s3_bucket}", s3_env, "delta")


def test_an_image_objects_row_deleted_by_its_key_stays_deleted_on_spark(s3_bucket, s3_env):
    privacy.an_object_deleted_by_key_stays_deleted(spark_job.main, f"s3://{s3_bucket}", s3_env, "delta")


def test_iceberg_nights_on_spark_after_a_compaction_and_a_delete(s3_bucket, s3_env):
    privacy.a_delete_after_a_compaction_then_a_changed_file(spark_job.main, f"s3://{s3_bucket}", s3_env, "iceberg")


def test_a_new_model_rolled_out_night_by_night_on_spark(s3_bucket, s3_env):
    rollout.a_rollout_night_by_night(spark_job.main, f"s3://{s3_bucket}", s3_env, "iceberg", 12)
