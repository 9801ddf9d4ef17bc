"""Several models in one run on SageMaker (``--local``: the packaged handler behind the real SageMaker PyTorch
toolkit, tests/integration/several_scenarios.py): one archive holds a classifier and a CLIP embedder, one transform
serves both, each image decoded once in the container; each table (a plain folder, a Delta table) holds what a
SageMaker run of its model alone writes."""

from __future__ import annotations

import pytest

from job import progress
from job.cli import run_main
from runners import sagemaker_job
from tests.integration import several_scenarios as several

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
ROLE = "arn:aws:iam::123456789012:role/batch-inference"


def main(argv):
    return sagemaker_job.main([*argv, "--local"])


@pytest.fixture
def models(tmp_path):
    return several.make_models(tmp_path / "models")


def test_two_models_in_one_transform_each_table_as_its_models_own(models, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.2)  # the display's log lines, at test speed
    source = str(tmp_path / "in")
    images = len(several.write_input(source, 0, 3, broken=True))
    manifests = several.each_table_is_its_models_own(main, models, source, ("classifier", "embedder"))
    settings = manifests["classifier"]["settings"]["sagemaker"]
    assert settings["failed_shards"] == [] and settings["shards"] == 4  # one a file: one transform for both models
    # The display counts every model's rows, each response's as it comes (both models score every file).
    done = f"sagemaker: {2 * images:,}/{2 * images:,} images (100%)"
    assert any(line.startswith(done) for line in capsys.readouterr().err.splitlines())


def test_a_night_of_several_tables_each_on_its_own_plan(models, tmp_path):
    """The tables score different files (one in a rollout, the other incremental): each shard runs only the models
    that score its file."""
    source = str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_night_of_several_tables_on_their_own_plans(main, models, source)


def test_a_run_of_several_models_killed_part_way_is_finished_by_resume(models, tmp_path):
    source = str(tmp_path / "in")
    several.write_input(source, 0, 3)
    several.a_run_killed_part_way_is_finished_by_resume(main, "runners.sagemaker_job", models, source, "--local")


def test_on_aws_an_entry_whose_library_the_serving_image_lacks_is_refused_before_any_work(models, tmp_path, capsys):
    toml = models.toml(("classifier", "embedder"))
    argv = ["--input", str(tmp_path / "in"), "--models", str(toml), "--role", ROLE, "--region", "us-east-1"]
    assert run_main(sagemaker_job.main, argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--models {toml} entry's model hf:" in err and "pass --image-uri" in err, err
