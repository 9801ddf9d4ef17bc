"""Every bad model on the plain-PyTorch engine: one line, exit 2, no traceback, before any image is read and before the
output is touched. Damaged or missing weight files, a folder that is not an image model, a processor the recipe cannot
say (the line names the options that can), a timm Hub name with no cached config, an MLflow store that is missing (and
stays missing), not a database or a folder, and a model too large for this machine's memory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from job.cli import run_main
from job.sample.synthetic import synthetic_rows, write_dataset
from runners import local_job
from storage import resolve
from tests.common.extras import library_or_skip
from tests.common.model_sources import current_store, hf_folder

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
HUGE_VIT = dict(hidden_size=16384, num_hidden_layers=40, num_attention_heads=128, intermediate_size=65536)  # 129 billion


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """Four photos, a tiny ViT classifier's folder and the folders each case damages or makes from it."""
    library_or_skip("transformers", "hf")
    import transformers as t

    root = tmp_path_factory.mktemp("bad-models")
    write_dataset(resolve(str(root / "in")), synthetic_rows(4, "jpeg", (320, 240), seed=7), rows_per_file=4)
    vit = hf_folder(root / "vit", "vit")
    weights = (vit / "model.safetensors").read_bytes()
    for name, data in (("empty", b""), ("cut", weights[: len(weights) // 2]), ("garbage", b"not a safetensors file" * 9)):
        shutil.copytree(vit, root / name)
        (root / name / "model.safetensors").write_bytes(data)
    t.BertForMaskedLM(t.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=64)).save_pretrained(root / "bert")
    shutil.copytree(vit, root / "mobilevit-default", ignore=shutil.ignore_patterns("preprocessor_config.json"))
    t.MobileViTImageProcessor().save_pretrained(root / "mobilevit-default")  # shortest_edge 224, crop 256
    huge = t.ViTConfig(**HUGE_VIT, num_labels=10, architectures=["ViTForImageClassification"])
    huge.save_pretrained(root / "huge")
    shutil.copy(vit / "preprocessor_config.json", root / "huge")
    (root / "not-a-database.db").write_text("a text file")
    (root / "a-folder.db").mkdir()
    return root


def refused(made: Path, tmp_path: Path, capsys, *argv: str) -> str:
    """The one line a run with ``argv`` is refused with (exit 2, the output untouched)."""
    capsys.readouterr()  # what the test printed before (a model's saving)
    code = run_main(local_job.main, ["--input", str(made / "in"), "--output", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
    return err.strip()


@pytest.mark.parametrize("folder, extra, words", [
    ("empty", (), "its model.safetensors is empty (0 bytes); save the model again with save_pretrained"),
    ("cut", (), "its model.safetensors is cut short or damaged"),
    ("garbage", (), "its model.safetensors is cut short or not a safetensors file"),
    ("bert", (), "holds a BertForMaskedLM (model_type 'bert'), not an image model; hf: takes an image classifier or an "
                 "image embedder"),
    ("mobilevit-default", (), "it crops 256 from the short side to 224 (the processor pads the rest with black); pass "
                              "--resize --crop to run it with a recipe you name"),
    ("huge", ("--weights", "random"), "parameters need about"),
])
def test_a_bad_hugging_face_folder_is_one_line(made, tmp_path, capsys, folder, extra, words):
    line = refused(made, tmp_path, capsys, "--model", f"hf:{made / folder}", *extra)
    assert line.startswith(f"error: hf:{made / folder}") and words in line, line


def test_a_model_too_large_for_this_machine_names_its_size_and_the_memory_there_is(made, tmp_path, capsys):
    line = refused(made, tmp_path, capsys, "--model", f"hf:{made / 'huge'}", "--weights", "random")
    assert " billion parameters need about " in line and " GiB available (" in line and "run it where there is more" in line


def test_the_options_run_what_the_processor_alone_cannot_say(made, tmp_path):
    manifest = local_job.main(["--input", str(made / "in"), "--output", str(tmp_path / "out"), "--model",
                               f"hf:{made / 'mobilevit-default'}", "--resize", "256", "--crop", "224", "--workers", "0"])
    recipe = manifest["execution"]["model"]["recipe"]
    assert (recipe["resize"], recipe["crop"], recipe["channel_order"]) == (256, 224, "bgr")  # the rest: the processor's
    assert manifest["execution"]["model"]["recipe_source"].endswith("; resize, crop from the options")


def test_a_timm_hub_name_whose_config_this_machine_lacks_is_one_line_at_once(made, tmp_path, capsys):
    library_or_skip("timm", "timm")
    line = refused(made, tmp_path, capsys, "--model", "timm:hf-hub:no-such-org/no-such-model", "--weights", "random")
    assert line == ("error: --model timm:hf-hub:no-such-org/no-such-model: its config.json is not in this machine's "
                    "Hugging Face cache, and the job never downloads at run time; download the model once "
                    "(huggingface-cli download no-such-org/no-such-model), or pass timm:local-dir:FOLDER holding its "
                    "config.json, with --weights its checkpoint")


@pytest.mark.parametrize("store, words", [
    ("missing/mlflow.db", "no such file (the job never creates a store)"),
    ("not-a-database.db", "not a sqlite database (11 bytes)"),
    ("a-folder.db", "a folder, not a sqlite database file"),
])
def test_an_mlflow_store_that_is_missing_not_a_database_or_a_folder_is_one_line(made, tmp_path, capsys, store, words):
    library_or_skip("mlflow", "mlflow")
    with current_store(f"sqlite:///{made / store}"):
        line = refused(made, tmp_path, capsys, "--model", "models:/pets/1")
    assert line.startswith(f"error: MLflow's store sqlite:///{made / store}: {words}"), line
    assert not (made / "missing").exists()  # never created, nor its folder


def test_a_missing_shard_is_named(made, tmp_path, capsys):
    from tests.common.hf_folders import hf_classifier

    folder = hf_classifier(tmp_path / "sharded", "levit", "sharded")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    shard = sorted(set(index["weight_map"].values()))[-1]
    (folder / shard).unlink()
    line = refused(made, tmp_path, capsys, "--model", f"hf:{folder}")
    assert f"its model.safetensors.index.json names {shard}, which is not in the folder; copy every shard" in line
