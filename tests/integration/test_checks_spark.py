"""The Spark job refuses a bad dataset and a second concurrent run before any work, and stops in one line, without
retrying a task, on bad data only the run can meet (scenarios in checks_scenarios and bad_data_scenarios)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import bad_data_scenarios as bad_data
from tests.integration import checks_scenarios as scenarios

SUBPROCESS = ("runners.spark_job", "--master", "local[2]")


@pytest.fixture(scope="module", autouse=True)
def spark():
    """One Spark for the module: the in-process runs use it; the subprocess run starts its own."""
    with local_spark() as session:
        yield session


def test_positional_ids_tell_partition_folders_apart(tmp_path):
    scenarios.positional_ids_tell_partition_folders_apart(spark_job.main, str(tmp_path), None)


def test_repeated_ids_are_refused_before_any_work(data_root, capsys):
    scenarios.repeated_ids_are_refused_before_any_work(spark_job.main, *data_root, capsys)


def test_a_file_without_the_id_column_is_refused_before_any_work(data_root, capsys):
    scenarios.a_file_without_the_id_column_is_refused_before_any_work(spark_job.main, *data_root, capsys)


def test_partition_folders_and_writer_markers_run(s3_bucket, s3_env, capsys):
    scenarios.partition_folders_and_writer_markers_run(spark_job.main, f"s3://{s3_bucket}", s3_env, capsys)


def test_a_second_concurrent_run_is_refused_and_the_first_finishes_alone(s3_bucket, s3_env, capsys):
    output = scenarios.concurrent_runs_into_one_prefix(spark_job.main, SUBPROCESS, f"s3://{s3_bucket}", s3_env, capsys)
    # The run started its own Spark without --verbose: none of Spark's own lines (its start-up WARNs, its log profile,
    # its console progress bar), only the job's.
    spark_lines = [line for line in output.splitlines() if re.search(r" WARN |log4j|log level|\[Stage \d", line)]
    assert not spark_lines, spark_lines


def test_a_crashed_runs_lease_is_taken_over_by_resume(tmp_path, capsys):
    scenarios.a_crashed_runs_lease_is_taken_over_by_resume(spark_job.main, str(tmp_path), None, capsys)


def without_failed_tasks(spark, scenario: Callable[[], None]) -> None:
    """Run ``scenario``; assert no Spark task of it failed, so none was retried (a damaged file fails every attempt)."""
    context, group = spark.sparkContext, f"bad-data-{uuid.uuid4().hex[:8]}"
    context.setJobGroup(group, "a bad-data scenario")
    try:
        scenario()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    stages = [tracker.getStageInfo(stage) for job in tracker.getJobIdsForGroup(group) for stage in tracker.getJobInfo(job).stageIds]
    assert stages and all(stage.numFailedTasks == 0 for stage in stages), stages


def test_a_null_id_is_refused_before_any_work(data_root, capsys):
    bad_data.a_null_id_is_refused_before_any_work(spark_job.main, *data_root, capsys)


def test_a_null_id_the_footers_do_not_count_stops_the_run(spark, s3_bucket, s3_env, capfd):
    without_failed_tasks(spark, lambda: bad_data.a_null_id_the_footers_do_not_count_stops_the_run(
        spark_job.main, f"s3://{s3_bucket}", s3_env, capfd))


def test_repeated_ids_without_the_id_check_are_named_at_the_end(tmp_path, capfd):
    bad_data.repeated_ids_without_the_id_check_are_named_at_the_end(spark_job.main, str(tmp_path), None, capfd)


def test_a_damaged_page_stops_the_run_and_resume_finishes(spark, tmp_path, capfd):
    without_failed_tasks(spark, lambda: bad_data.a_damaged_page_stops_the_run_and_resume_finishes(
        spark_job.main, str(tmp_path), None, capfd))


def test_an_output_inside_the_input_is_refused_up_front(data_root, capsys):
    bad_data.an_output_inside_the_input_is_refused_up_front(spark_job.main, *data_root, capsys)
