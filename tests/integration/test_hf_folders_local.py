"""Hugging Face folders on the plain-PyTorch engine, as their own processor and model answer (tests.common.hf_folders):
every processor type whose steps go beyond resize, crop and normalise (MobileViT, EfficientNet, LeViT, PoolFormer),
DeiT's distilled classifier, a multi-label head scored by sigmoids, and every layout save_pretrained writes, local and
on S3. Top-1 on at least 15 of 16 photos, each score within 0.01 of the model's own."""

from __future__ import annotations

import boto3
import pytest

from job.sample.synthetic import write_dataset
from runners import local_job
from storage import resolve
from tests.common.contract import read_output
from tests.common.extras import library_or_skip
from tests.common.hf_folders import (FAST_SCORE_TOLERANCE, FOLDERS, SCORE_TOLERANCE, assert_rows_are_the_models_own,
                                     hf_answers, hf_classifier, photos)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """16 photos in two files, and each kind's folder (one model.safetensors), made once for the module."""
    library_or_skip("transformers", "hf")
    root = tmp_path_factory.mktemp("hf-folders")
    rows = [(f"photo-{i}", data) for i, data in enumerate(photos())]
    write_dataset(resolve(str(root / "in")), iter(rows), rows_per_file=8)
    for kind in FOLDERS:
        hf_classifier(root / kind, kind)
    return root


def ids() -> list[str]:
    return [f"photo-{i}" for i in range(len(photos()))]


def run(root, model: str, output, *extra: str) -> tuple[list[dict], dict]:
    manifest = local_job.main(["--input", str(root / "in"), "--output", str(output), "--model", model, "--batch-size",
                               "8", "--workers", "0", *extra])
    rows, _ = read_output(str(output))
    return rows, manifest


@pytest.mark.parametrize("kind, cpu_resize", [(kind, "exact") for kind in FOLDERS] + [(kind, "fast") for kind in FOLDERS])
def test_each_folder_runs_as_its_own_processor_and_model_answer(root, tmp_path, kind, cpu_resize):
    rows, manifest = run(root, f"hf:{root / kind}", tmp_path / "out", "--cpu-resize", cpu_resize)
    tolerance = SCORE_TOLERANCE if cpu_resize == "exact" else FAST_SCORE_TOLERANCE
    assert_rows_are_the_models_own(rows, ids(), hf_answers(root / kind, photos()), tolerance)
    model = manifest["execution"]["model"]
    assert model["activation"] == ("multi_label" if kind == "vit-multilabel" else "softmax")
    assert (model["recipe"]["channel_order"] == "bgr") == (kind == "mobilevit")


def test_a_multi_label_rows_scores_are_each_classes_sigmoid_and_need_not_sum_to_one(root, tmp_path):
    rows, _ = run(root, f"hf:{root / 'vit-multilabel'}", tmp_path / "out", "--topk", "3")
    assert any(abs(sum(row["topk_scores"]) - 1) > 0.05 for row in rows)  # softmax's would, to the last digit
    assert all(list(row["topk_scores"]) == sorted(row["topk_scores"], reverse=True) for row in rows)


@pytest.mark.parametrize("layout", ["sharded", "bin"])
def test_every_layout_save_pretrained_writes_runs(root, tmp_path, layout):
    folder = hf_classifier(tmp_path / layout, "levit", layout)
    assert not (folder / "model.safetensors").exists()
    assert layout != "sharded" or len(list(folder.glob("model-*-of-*.safetensors"))) >= 2
    rows, manifest = run(root, f"hf:{folder}", tmp_path / "out", "--cpu-resize", "exact")
    assert_rows_are_the_models_own(rows, ids(), hf_answers(folder, photos()))
    assert len(manifest["execution"]["model"]["weights_sha256"]) == 64


def test_a_sharded_folder_on_s3_is_copied_with_every_shard(root, tmp_path, s3_bucket, s3_env):
    folder = hf_classifier(tmp_path / "sharded", "poolformer", "sharded")
    s3 = boto3.client("s3", endpoint_url=s3_env)
    for path in sorted(folder.iterdir()):
        s3.upload_file(str(path), s3_bucket, f"poolformer/{path.name}")
    rows, manifest = run(root, f"hf:s3://{s3_bucket}/poolformer", tmp_path / "out", "--s3-endpoint-url", s3_env,
                         "--cpu-resize", "exact")
    assert_rows_are_the_models_own(rows, ids(), hf_answers(folder, photos()))
    assert manifest["execution"]["model"]["source"] == f"hf:s3://{s3_bucket}/poolformer"
