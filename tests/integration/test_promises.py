"""A night's promises on the local engine, Delta and Iceberg: real SIGKILLs of a child night at each step, other
writers' commits while a night waits at a step (tests/integration/promises_scenarios.py). The first four run on Ray
and Spark too (test_promises_ray.py, test_promises_spark.py)."""

from __future__ import annotations

import pytest

from job.cli import run_main
from runners import local_job
from tests.integration import promises_scenarios as promises

LOCAL = ("--workers", "0")
MODULE = "runners.local_job"
FORMATS = ("delta", "iceberg")


def main(argv):
    return local_job.main([*argv, *LOCAL])


def refuse(capsys):
    """A refusal as the command meets it: exit 2 and its one line (the test's ``refused``)."""
    def refused(argv) -> str:
        capsys.readouterr()
        assert run_main(main, list(argv)) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
        return err.removeprefix("error: ").rstrip("\n")
    return refused


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_delete_during_a_rollout_night_stays_deleted(table_format, tmp_path):
    promises.a_delete_during_a_rollout_night_stays_deleted(main, MODULE, str(tmp_path), None, table_format, *LOCAL)


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_night_after_a_lost_manifest_commits_its_own(table_format, tmp_path):
    promises.a_night_after_a_lost_manifest_commits_its_own(main, MODULE, str(tmp_path), None, table_format, *LOCAL)


@pytest.mark.parametrize("table_format", FORMATS)
def test_rollouts_back_and_forth_never_delete_a_live_part(table_format, tmp_path):
    promises.rollouts_back_and_forth_never_delete_a_live_part(main, str(tmp_path), None, table_format)


@pytest.mark.parametrize("table_format", FORMATS)
def test_resume_does_what_the_line_says(table_format, tmp_path):
    promises.resume_does_what_the_line_says(main, MODULE, str(tmp_path), None, table_format, *LOCAL)


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_new_file_repeating_a_rescored_files_ids_is_refused_before_any_work(table_format, tmp_path, capsys):
    promises.a_new_file_repeating_a_rescored_files_ids_is_refused_before_any_work(main, str(tmp_path), None,
                                                                                 table_format, refuse(capsys))


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_rollout_of_options_of_the_same_model_is_refused_naming_overwrite(table_format, tmp_path, capsys):
    promises.a_rollout_of_options_of_the_same_model_is_refused_naming_overwrite(main, str(tmp_path), None,
                                                                               table_format, refuse(capsys))


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_partial_delete_never_pins_a_rollout_and_counts_are_the_tables(table_format, tmp_path):
    promises.a_partial_delete_never_pins_a_rollout_and_counts_are_the_tables(main, str(tmp_path), None, table_format)


@pytest.mark.parametrize("table_format", FORMATS)
def test_every_run_a_row_names_has_its_record(table_format, tmp_path):
    promises.every_run_a_row_names_has_its_record(main, MODULE, str(tmp_path), None, table_format)
