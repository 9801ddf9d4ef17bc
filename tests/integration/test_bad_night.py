"""Bad nights on the local engine, on a local path and on S3: where they are decided (job.night.plan), whatever
engine runs the night; tests/integration/test_incremental_ray.py runs one of them (empty files) on Ray."""

from __future__ import annotations

import dataclasses

import pytest

from runners import local_job
from tests.integration import bad_night_scenarios as scenarios

LOCAL = ("--workers", "0", "--batch-size", "8", "--weights", "random")


def main(argv):
    return local_job.main([*argv, *LOCAL])


def with_local_defaults(parser):
    """The local engine's options, its DataLoader in the test's own process (as LOCAL passes)."""
    local_job.ENGINE.add_arguments(parser)
    parser.set_defaults(workers=0)


@pytest.mark.parametrize("scenario", [scenarios.empty_files_are_files_of_the_table,
                                      scenarios.a_stopped_night_is_finished_by_resume,
                                      scenarios.a_part_deleted_by_hand_is_redone,
                                      scenarios.a_part_cut_short_is_redone], ids=lambda s: s.__name__)
def test_bad_night_ends_in_the_fresh_runs_table(scenario, data_root):
    root, endpoint = data_root
    scenario(main, root, endpoint)


@pytest.mark.parametrize("scenario", [scenarios.an_input_file_deleted_mid_run, scenarios.an_input_file_replaced_mid_run],
                         ids=lambda s: s.__name__)
def test_an_input_changed_under_the_run_stops_it_in_one_line(scenario, tmp_path):
    scenario(dataclasses.replace(local_job.ENGINE, add_arguments=with_local_defaults), str(tmp_path), None)


def test_a_damaged_index_is_refused_in_one_line(data_root, capsys):
    root, endpoint = data_root
    scenarios.a_damaged_index_is_refused_in_one_line(main, root, endpoint, capsys)


def test_a_renamed_file_under_keep_removed_is_not_kept_twice(tmp_path):
    scenarios.a_renamed_file_under_keep_removed(main, str(tmp_path), None)


@pytest.mark.parametrize("table_format", ["parquet", "delta", "iceberg"])
@pytest.mark.parametrize("step", scenarios.KILL_STEPS)
def test_a_night_killed_at_each_step_is_finished_by_resume_and_incremental(tmp_path, step, table_format, monkeypatch):
    scenarios.a_night_killed_at_a_step_is_finished(main, str(tmp_path), None, step, table_format, monkeypatch)
