"""Several models in one run on Ray, one Ray for the module (tests/integration/several_scenarios.py): every model in
each predictor actor, each image decoded once by the CPU actors; a run killed part-way finished by --resume."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import several_scenarios as several

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")]


def test_three_models_in_one_run_on_ray_each_table_as_its_models_own(tmp_path):
    models, source = several.make_models(tmp_path / "models"), str(tmp_path / "in")
    several.write_input(source, 0, 3, broken=True)
    several.each_table_is_its_models_own(ray_job.main, models, source, ("classifier", "embedder", "timm"))


def test_a_run_of_several_models_on_ray_killed_part_way_is_finished_by_resume(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # the killed run starts a Ray of its own, never joins this one
    models, source = several.make_models(tmp_path / "models"), str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_run_killed_part_way_is_finished_by_resume(ray_job.main, "runners.ray_job", models, source)
