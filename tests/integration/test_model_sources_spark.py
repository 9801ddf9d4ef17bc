"""Every model source on Spark (one local Spark for the module): each Python worker loads the model the driver
described once (a timm checkpoint, a Hugging Face folder, an MLflow model read from the store the driver resolved it
in); the rows agree with the model's own reference pipeline. A Hugging Face folder whose processor has steps of its own
(MobileViT's) and a sharded one run on the workers as their own processor and model answer."""

from __future__ import annotations

import pytest

from runners import spark_job
from tests.common.contract import read_output
from tests.common.hf_folders import ENGINE_FOLDERS, assert_rows_are_the_models_own, write_folder_case
from tests.common.model_sources import SourceCase, assert_agrees, current_store
from tests.common.spark import local_spark

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
KEYS = ("timm-efficientnet", "timm-vit", "hf-vit", "hf-clip", "hf-dinov2", "mlflow-version", "mlflow-alias")
# CI runs a registered model on Spark (read by each worker from the store the driver resolved it in); the local engine
# runs every source (test_model_sources_local.py), and `-m slow` runs the others here.
IN_CI = ("mlflow-version",)
PARAMS = [key if key in IN_CI else pytest.param(key, marks=pytest.mark.slow) for key in KEYS]


@pytest.fixture(scope="module")
def case(source_case) -> SourceCase:
    with local_spark(), current_store(source_case.tracking):  # the driver's store only: workers read the description's
        yield source_case


@pytest.mark.parametrize("key", PARAMS)
def test_each_source_agrees_with_its_own_reference_pipeline(case, key, tmp_path):
    manifest = spark_job.main(case.command(key, tmp_path / "out"))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_agrees(case, key, rows, manifest)
    assert manifest["engine"] == "spark"


@pytest.fixture(scope="module")
def folders(case, tmp_path_factory):
    """A MobileViT folder (its processor's own steps: no normalisation, B, G, R) and a sharded LeViT one; run in the
    module's one Spark (``case``'s)."""
    return write_folder_case(tmp_path_factory.mktemp("hf-folders"))


@pytest.mark.parametrize("key", list(ENGINE_FOLDERS))
def test_a_folders_own_processor_steps_and_shards_run_on_spark(folders, key, tmp_path):
    manifest = spark_job.main(folders.command(key, tmp_path / "out"))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_rows_are_the_models_own(rows, folders.ids, folders.answers[key])
    assert manifest["engine"] == "spark"
