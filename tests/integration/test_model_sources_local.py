"""Every model source on the plain-PyTorch engine and SageMaker --local: a timm EfficientNet (bicubic) and ViT, a
Hugging Face ViT classifier, CLIP, SigLIP and DINOv2 embedders, an MLflow model by version and by alias. Each run's
rows agree with the model's own reference pipeline (tests.common.model_sources): top-1 on at least 95% of rows,
embeddings at cosine >= 0.99. Each bad model is refused in one line, exit 2, before the output is touched."""

from __future__ import annotations

import json
import shutil

import boto3
import pytest

from job.cli import run_main
from runners import local_job
from tests.common.contract import read_output
from tests.common.model_sources import SourceCase, assert_agrees, current_store

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
KEYS = ("timm-efficientnet", "timm-vit", "hf-vit", "hf-clip", "hf-siglip", "hf-dinov2", "mlflow-version", "mlflow-alias")
RECIPES = {"timm-efficientnet": "timm's test_efficientnet pretrained_cfg", "timm-vit": "timm's test_vit pretrained_cfg",
           "hf-vit": "ViTImageProcessor of hf:", "hf-clip": "CLIPImageProcessor of hf:", "hf-siglip": "SiglipImageProcessor of hf:",
           "hf-dinov2": "BitImageProcessor of hf:", "mlflow-version": "logged with mlflow:models:/pets/1",
           "mlflow-alias": "logged with mlflow:models:/pets/1"}


@pytest.fixture(scope="module")
def case(source_case) -> SourceCase:
    with current_store(source_case.tracking):
        yield source_case


@pytest.mark.parametrize("key", KEYS)
def test_each_source_agrees_with_its_own_reference_pipeline(case, key, tmp_path):
    manifest = local_job.main(case.command(key, tmp_path / "out", "--workers", "0"))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_agrees(case, key, rows, manifest)
    model = manifest["execution"]["model"]
    assert model["recipe_source"].startswith(RECIPES[key]) and manifest["execution"]["recipe"] == model["recipe"]


def test_sagemaker_ships_a_folder_from_s3_and_an_mlflow_model_in_its_archive(case, s3_bucket, s3_env, tmp_path):
    from runners import sagemaker_job
    from tests.common.extras import skip_without

    skip_without("sagemaker")
    s3 = boto3.client("s3", endpoint_url=s3_env)
    for folder in ("in", "hf-vit"):
        for path in sorted((case.root / folder).iterdir()):
            s3.upload_file(str(path), s3_bucket, f"{folder}/{path.name}")
    argv = ["--local", "--input", f"s3://{s3_bucket}/in/", "--s3-endpoint-url", s3_env, "--batch-size", "8", "--embeddings"]
    for key, model in (("hf-vit", f"hf:s3://{s3_bucket}/hf-vit"), ("mlflow-alias", "models:/pets@champion")):
        output = f"s3://{s3_bucket}/out-{key}/"
        manifest = sagemaker_job.main([*argv, "--model", model, "--output", output])
        rows, _ = read_output(output, s3_env)
        assert_agrees(case, key, rows, manifest, lineage=f"{model.split('@')[0]} sha256:" if key == "hf-vit" else None)


def _not_a_model(case: SourceCase, tmp_path) -> dict[str, str]:
    broken = shutil.copytree(case.root / "hf-vit", tmp_path / "broken")
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "hidden_size": 48, "intermediate_size": 96}))
    return {"INPUT": str(case.root / "in"), "BROKEN": str(broken), "CLIPDIR": str(case.root / "hf-clip"),
            "EFFICIENTNET": str(case.root / "efficientnet.pt")}


@pytest.mark.parametrize("argv, words", [
    (["--model", "hf:INPUT"], "hf:INPUT: no config.json in the folder; not a folder written by save_pretrained"),
    (["--model", "hf:BROKEN"], "hf:BROKEN: its model.safetensors does not fit its config.json: "),
    (["--model", "timm:test_vit", "--weights", "EFFICIENTNET"], "EFFICIENTNET: not a timm test_vit state dict"),
    (["--model", "timm:test_vit"], "--model timm:test_vit needs --weights: a timm checkpoint"),
    (["--model", "models:/pets/7"], "--model models:/pets/7 does not resolve in MLflow's registry at sqlite:"),
    (["--model", "models:/pets@champion", "--weights", "imagenet"], "--weights imagenet: --model models:/pets@champion "
                                                                    "holds its own weights"),
    (["--model", "hf:CLIPDIR"], "--model hf:CLIPDIR is an embedder (CLIP's image embedding"),
])
def test_a_model_the_job_cannot_use_is_one_line_before_the_output_is_touched(case, tmp_path, capsys, argv, words):
    named = _not_a_model(case, tmp_path)
    argv = [next((arg.replace(k, v) for k, v in named.items() if k in arg), arg) for arg in argv]
    words = next((words.replace(k, v) for k, v in named.items() if k in words), words)
    code = run_main(local_job.main, ["--input", named["INPUT"], "--output", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "out").exists()
