"""--dry-run on the local engine: the plain folder, Delta and Iceberg (tests/integration/dry_run_scenarios.py); on Ray
and on Spark in test_promises_ray.py and test_promises_spark.py, beside their sessions' other nights."""

from __future__ import annotations

import pytest

from runners import local_job
from tests.integration import dry_run_scenarios as dry
from tests.integration.test_promises import refuse

LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


@pytest.mark.parametrize("table_format", ["parquet", "delta", "iceberg"])
def test_a_dry_run_announces_exactly_what_the_night_scores_and_writes_nothing(table_format, tmp_path):
    dry.a_dry_run_announces_what_the_night_scores(main, str(tmp_path), None, table_format)


def test_a_bad_option_is_refused_by_a_dry_run_as_by_the_night(tmp_path, capsys):
    dry.a_bad_option_is_refused_by_a_dry_run_as_by_the_night(main, str(tmp_path), refuse(capsys))
