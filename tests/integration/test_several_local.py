"""Several models in one run on the local engine (tests/integration/several_scenarios.py): three models into a plain
folder, a Delta and an Iceberg table, each as its own run writes it; a night of tables on their own plans; a run killed
part-way finished by --resume."""

from __future__ import annotations

import pytest

from runners import local_job
from tests.integration import several_scenarios as several

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


@pytest.fixture
def models(tmp_path):
    return several.make_models(tmp_path / "models")


def test_three_models_in_one_run_each_table_as_its_models_own(models, tmp_path):
    source = str(tmp_path / "in")
    several.write_input(source, 0, 3, broken=True)
    several.each_table_is_its_models_own(main, models, source, ("classifier", "embedder", "timm"))


def test_a_night_of_several_tables_each_on_its_own_plan(models, tmp_path):
    source = str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_night_of_several_tables_on_their_own_plans(main, models, source)


def test_a_run_of_several_models_killed_part_way_is_finished_by_resume(models, tmp_path):
    source = str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_run_killed_part_way_is_finished_by_resume(main, "runners.local_job", models, source, *LOCAL)
