"""Your model, your labels, your embeddings on every engine, held against plain torchvision.

One 10-class fine-tuned ResNet50 checkpoint (DDP-prefixed keys, class names saved beside them),
eleven photos and a truncated JPEG in three files. Ray, Spark, SageMaker ``--local`` and the
local baseline each run it once for the session with embeddings beside the predictions
(``tests.common.every_engine``: runners.compare's run, which test_compare reads too); every
engine must give what ``torchvision``'s own ``resnet50(num_classes=10)`` with the same weights
gives on the project's recipe's pixels: the same top-1, its name, and the pooled feature (cosine
>= 0.999). Then the options that change what a row means (other names, another recipe) are
refused by ``--resume``, and every bad input is refused in one line, exit 2, with nothing
written: the output prefix is not even created, and it is created (by the run's lease) before
any image is read.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from inference.labels import names_sha256
from job.cli import run_main
from job.night.manifest import MANIFEST
from job.output.parts import read_part_record
from preprocess.recipe import IMAGENET_RECIPE
from runners import local_job
from runners.compare.parity import check_parity, read_outcomes
from storage import resolve
from tests.common.checkpoints import write_checkpoint
from tests.common.contract import assert_output_contract, read_output
from tests.common.embeddings import assert_same_features, embeddings_of
from tests.common.every_engine import BAD, ENGINES, NAMES, Case


@pytest.fixture(scope="module")
def case(every_engine) -> Case:
    return every_engine.case


@pytest.fixture(scope="module")
def outputs(every_engine) -> dict[str, Path]:
    """Every engine's output for the checkpoint, with embeddings beside the predictions."""
    return {engine: every_engine.output(engine) for engine in ENGINES}


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_torchvisions_top1_and_the_checkpoints_names(case, outputs, engine):
    rows, manifest = read_output(str(outputs[engine]))
    assert manifest["engine"] == engine
    assert_output_contract(rows, manifest, case.ids, BAD, names=list(NAMES))
    got = {row["id"]: row for row in rows}
    assert {i: got[i]["label"] for i in case.top1} == case.top1
    assert {i: got[i]["label_name"] for i in case.top1} == {i: NAMES[label] for i, label in case.top1.items()}
    assert got["bad-truncated"]["embedding"] is None


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engines_embeddings_are_torchvisions_pooled_feature(case, outputs, engine):
    assert_same_features(embeddings_of(outputs[engine]), case.pooled)


def test_the_engines_agree_on_names_and_embeddings(case, outputs):
    parity = check_parity({engine: read_outcomes(str(path)) for engine, path in outputs.items()})  # runners.compare's check
    assert parity.ok and parity.mismatches == 0 and parity.rows == len(case.ids) == 12, parity.examples
    assert parity.min_embedding_cosine >= 0.999
    first = embeddings_of(outputs[ENGINES[0]])
    for engine in ENGINES[1:]:
        assert_same_features(embeddings_of(outputs[engine]), first)


def test_the_manifest_and_every_footer_record_the_model(case, outputs):
    _, manifest = read_output(str(outputs["spark"]))
    model = manifest["execution"]["model"]
    assert (model["arch"], model["num_classes"], model["embedding_dim"], model["class_names"]) == ("resnet50", 10, 2048, list(NAMES))
    assert model["names_source"] == f"checkpoint {case.checkpoint}" and model["names_sha256"] == names_sha256(NAMES)
    assert model["weights_sha256"] == hashlib.sha256(case.checkpoint.read_bytes()).hexdigest()
    assert model["recipe"] == manifest["execution"]["recipe"] == IMAGENET_RECIPE.to_dict()
    for name in manifest["files"]:
        options = read_part_record(resolve(str(outputs["spark"])), name)[1]["options"]
        assert {key: options[key] for key in ("arch", "names_sha256", "weights_sha256", "recipe", "topk", "embeddings")} == \
            {"arch": "resnet50", "names_sha256": model["names_sha256"], "weights_sha256": model["weights_sha256"],
             "recipe": model["recipe"], "topk": 5, "embeddings": "float32"}


@pytest.mark.parametrize("changed, named", [
    (["--labels", "NAMES"], "names_sha256"),
    (["--resize", "256"], "recipe"),
    ([], None),  # the same options: resumed, nothing to run again
])
def test_resume_refuses_other_names_or_another_recipe(case, outputs, tmp_path, capsys, changed, named):
    interrupted = tmp_path / "out"
    shutil.copytree(outputs["local"], interrupted)
    (interrupted / MANIFEST).unlink()  # what a killed run leaves: every part, no manifest
    (tmp_path / "names.txt").write_text("\n".join(reversed(NAMES)))
    changed = [str(tmp_path / "names.txt") if arg == "NAMES" else arg for arg in changed]
    code = run_main(local_job.main, case.argv(interrupted, "--embeddings", "--workers", "0", "--resume", *changed))
    err = capsys.readouterr().err
    if named is None:
        assert code == 0 and json.loads((interrupted / MANIFEST).read_text())["input_files"]["run"] == 0
        return
    assert code == 2 and err.count("\n") == 1 and f"other options ({named}" in err, err
    assert not (interrupted / MANIFEST).exists()


def test_embeddings_alone_in_float32_and_names_from_a_labels_file(case, tmp_path):
    local_job.main(case.argv(tmp_path / "alone", "--embeddings", "only", "--embedding-dtype", "float32", "--workers", "0"))
    rows, _ = read_output(str(tmp_path / "alone"))
    assert list(rows[0]) == ["id", "embedding", "error", "source_file", "run_id", "model", "made_at"]  # no predictions
    for row in rows:
        if row["id"] in case.pooled:  # float32: torchvision's values themselves, to float rounding
            np.testing.assert_allclose(row["embedding"], case.pooled[row["id"]], rtol=1e-4, atol=1e-4)
    (tmp_path / "names.json").write_text(json.dumps([name.upper() for name in NAMES]))
    local_job.main(case.argv(tmp_path / "named", "--labels", str(tmp_path / "names.json"), "--topk", "3", "--workers", "0"))
    rows, manifest = read_output(str(tmp_path / "named"))
    assert_output_contract(rows, manifest, case.ids, BAD, topk=3, names=[name.upper() for name in NAMES])
    assert manifest["execution"]["model"]["names_source"] == f"labels {tmp_path / 'names.json'}"


def _write_bad_inputs(case: Case, directory: Path) -> dict[str, Path]:
    directory.mkdir(exist_ok=True)
    state = torch.load(case.checkpoint, weights_only=True)
    torch.save({"epoch": 3, "optimizer": {"lr": 0.1}, "best_acc": 0.9}, directory / "training.pt")  # no tensors at all
    write_checkpoint(directory / "bad-recipe.pt", {k.removeprefix("module."): v for k, v in state.items() if k.startswith("module.")},
                     recipe={"resize": 256, "crop": -224})
    (directory / "nine.txt").write_text("\n".join(NAMES[:9]))
    (directory / "twice.txt").write_text("\n".join([*NAMES[:9], NAMES[2]]))
    return {"training": directory / "training.pt", "bad-recipe": directory / "bad-recipe.pt",
            "nine": directory / "nine.txt", "twice": directory / "twice.txt"}


@pytest.mark.parametrize("argv, words", [
    (["--weights", "training"], "training.pt: no state dict found: a dict with keys epoch, optimizer, best_acc and no tensors"),
    (["--labels", "nine"], "nine.txt: 9 names for a model with 10 classes; give one name per class"),
    (["--labels", "twice"], "twice.txt: 'Maine Coon' is both name 2 and name 9; names must be distinct"),
    (["--weights", "bad-recipe"], "the recipe's crop must be a positive whole number of pixels, got -224"),
    (["--crop", "0"], "argument --crop: must be an integer >= 1, got 0"),
    (["--topk", "11"], "--topk 11: the model has 10 classes; pass --topk 10 or fewer"),
    (["--arch", "resnet101"], "not a resnet101 state dict"),
])
def test_each_bad_input_is_refused_in_one_line_with_nothing_written(case, tmp_path, capsys, argv, words):
    files = _write_bad_inputs(case, tmp_path / "bad")
    argv = [str(files[arg]) if arg in files else arg for arg in argv]
    try:
        code = run_main(local_job.main, [*case.argv(tmp_path / "out", "--embeddings", "--workers", "0"), *argv])
    except SystemExit as e:  # argparse's own refusal of a malformed option
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_bad_checkpoint_from_the_real_command_line_is_one_line(case, tmp_path):
    files = _write_bad_inputs(case, tmp_path / "bad")
    done = subprocess.run([sys.executable, "-m", "runners.local_job", *case.argv(tmp_path / "out", "--workers", "0"),
                           "--weights", str(files["training"])], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "no state dict found" in done.stderr and not (tmp_path / "out").exists()
