"""Every model source on Ray (one local Ray of 2 CPUs for the module): the driver describes the model once and each
predictor actor loads it once from where the driver pinned it (a timm checkpoint, a Hugging Face folder, an MLflow
model read from the store the driver resolved it in); the rows agree with the model's own reference pipeline."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.common.contract import read_output
from tests.common.model_sources import SourceCase, assert_agrees, current_store

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")]
KEYS = ("timm-efficientnet", "timm-vit", "hf-vit", "hf-clip", "hf-dinov2", "mlflow-version", "mlflow-alias")
# CI runs a registered model on Ray (read by each actor from the store the driver resolved it in); the local engine
# runs every source (test_model_sources_local.py), and `-m slow` runs the others here.
IN_CI = ("mlflow-alias",)
PARAMS = [key if key in IN_CI else pytest.param(key, marks=pytest.mark.slow) for key in KEYS]


@pytest.fixture(scope="module")
def case(source_case) -> SourceCase:
    with current_store(source_case.tracking):  # the driver's store only: the actors are told it by the model's description
        yield source_case


@pytest.mark.parametrize("key", PARAMS)
def test_each_source_agrees_with_its_own_reference_pipeline(case, key, tmp_path):
    manifest = ray_job.main(case.command(key, tmp_path / "out", "--num-cpu-actors", "1"))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_agrees(case, key, rows, manifest)
    assert manifest["engine"] == "ray"
