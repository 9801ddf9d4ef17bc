"""Several models in one run on Spark, one session for the module (tests/integration/several_scenarios.py): every model
in each Python worker, each image decoded once a task; a night of tables each on its own plan."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.spark import local_spark
from tests.integration import several_scenarios as several

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module", autouse=True)
def spark():
    with local_spark() as session:
        yield session


def test_two_models_in_one_run_on_spark_each_table_as_its_models_own(tmp_path):
    models, source = several.make_models(tmp_path / "models"), str(tmp_path / "in")
    several.write_input(source, 0, 3, broken=True)
    several.each_table_is_its_models_own(spark_job.main, models, source, ("classifier", "timm"))


def test_a_night_of_several_tables_on_spark_each_on_its_own_plan(tmp_path):
    models, source = several.make_models(tmp_path / "models"), str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_night_of_several_tables_on_their_own_plans(spark_job.main, models, source)
