"""--incremental on SageMaker (``--local``: the real toolkit's serving code on this machine), local paths:
nightly runs keep the table equal to a fresh full run, as on Ray and Spark."""

from __future__ import annotations

from runners import sagemaker_job
from tests.integration import incremental_scenarios as scenarios
from tests.integration import rollout_scenarios as rollout
from tests.integration import table_scenarios as tables


def test_nightly_runs_equal_a_fresh_full_run_with_local_transforms(tmp_path):
    scenarios.nightly_runs_equal_a_fresh_full_run(sagemaker_job.main, str(tmp_path), None, "--local")


def test_a_replaced_input_file_is_redone_on_resume_with_local_transforms(tmp_path):
    scenarios.a_replaced_input_file_is_redone_on_resume(sagemaker_job.main, str(tmp_path), None, "--local")


def test_a_delta_table_holds_the_parquet_folders_rows_with_local_transforms(tmp_path):
    scenarios.write_night(f"{tmp_path}/in", None, 0, 2)
    tables.table_equals_the_parquet_folder(sagemaker_job.main, str(tmp_path), None, "delta", "--local")


def test_a_new_model_rolled_out_night_by_night_with_local_transforms(tmp_path):
    rollout.a_rollout_night_by_night(sagemaker_job.main, str(tmp_path), None, "parquet", 12, "--local")
