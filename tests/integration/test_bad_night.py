"""Bad nights on the local engine, on a local path and on S3 (the Ray tests run the same scenarios once)."""

from __future__ import annotations

import pytest

from runners import local_job
from tests.integration import bad_night_scenarios as scenarios

LOCAL = ("--workers", "0", "--batch-size", "8", "--weights", "random")


def main(argv):
    return local_job.main([*argv, *LOCAL])


@pytest.mark.parametrize("scenario", [scenarios.empty_files_are_files_of_the_table,
                                      scenarios.a_stopped_night_is_finished_by_resume,
                                      scenarios.a_part_deleted_by_hand_is_redone], ids=lambda s: s.__name__)
def test_bad_night_ends_in_the_fresh_runs_table(scenario, data_root):
    root, endpoint = data_root
    scenario(main, root, endpoint)
