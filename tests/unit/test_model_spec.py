"""What the driver decides once: classes, names and recipe, from weights, labels and options."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import pytest
import torch

from inference import ModelSpec, WeightsError, describe_model, load_model
from inference.labels import names_sha256
from preprocess.recipe import IMAGENET_RECIPE, Recipe
from tests.common.checkpoints import fine_tuned_checkpoint

NAMES = [f"breed {i}" for i in range(10)]


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """A 10-class DDP checkpoint with class names and a 256/224 recipe."""
    path = tmp_path_factory.mktemp("ckpt") / "pets.pt"
    fine_tuned_checkpoint(path, 10, "ddp", class_names=NAMES, recipe={"resize": 256})
    return path


def test_random_weights_are_described_without_importing_torch():
    code = ("import sys; from inference import describe_model; s = describe_model('random', arch='convnext_tiny'); "
            "print(s.num_classes, s.embedding_dim, sorted({'torch', 'torchvision'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1000", "768", "[]"]


def test_random_weights_have_no_names_and_the_archs_recipe():
    spec = describe_model("random")
    assert (spec.arch, spec.num_classes, spec.embedding_dim, spec.recipe) == ("resnet50", 1000, 2048, IMAGENET_RECIPE)
    assert spec.class_names is spec.names_source is spec.names_sha256 is spec.weights_sha256 is None


def test_a_checkpoint_gives_its_classes_names_recipe_and_hash(named):
    spec = describe_model(str(named))
    assert spec.num_classes == 10 and spec.class_names == tuple(NAMES)
    assert spec.names_source == f"checkpoint {named}" and spec.names_sha256 == names_sha256(NAMES)
    assert spec.recipe == Recipe(resize=256, crop=224)
    assert len(spec.weights_sha256) == 64


def test_a_labels_file_wins_over_the_checkpoints_names(named, tmp_path):
    (tmp_path / "labels.txt").write_text("\n".join(f"chat {i}" for i in range(10)) + "\n")
    spec = describe_model(str(named), labels=str(tmp_path / "labels.txt"))
    assert spec.class_names[3] == "chat 3" and spec.names_source == f"labels {tmp_path / 'labels.txt'}"
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(WeightsError, match=r"short.txt: 2 names for a model with 10 classes"):
        describe_model(str(named), labels=str(tmp_path / "short.txt"))


def test_names_that_do_not_fit_the_head_are_refused(tmp_path):
    path = tmp_path / "seven.pt"
    fine_tuned_checkpoint(path, 7, "state_dict", class_names=NAMES)
    with pytest.raises(WeightsError, match=r"class names from checkpoint .*seven.pt: 10 names for a model with 7 classes"):
        describe_model(str(path))


def test_a_one_logit_head_is_a_binary_classifier_of_two_classes(tmp_path):
    path = tmp_path / "binary.pt"
    fine_tuned_checkpoint(path, 1, "state_dict", class_names=["cat", "dog"])
    spec = describe_model(str(path))
    assert (spec.num_classes, spec.activation, spec.class_names) == (2, "sigmoid", ("cat", "dog"))
    assert ModelSpec.from_dict(spec.to_dict()) == spec
    assert load_model(spec).module.fc.out_features == 1  # the network keeps its one logit; it is scored as two classes
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    with pytest.raises(WeightsError, match=r"three.txt: 3 names for a model with 2 classes"):
        describe_model(str(path), labels=str(tmp_path / "three.txt"))


@pytest.mark.parametrize("head", [torch.zeros(2048), torch.zeros(0, 2048), torch.zeros(1, 2048, 1, 1)])
def test_a_head_that_is_not_a_plain_linear_is_refused_naming_arch_and_labels(tmp_path, head):
    state = {**load_model("random").module.state_dict(), "fc.weight": head, "fc.bias": torch.zeros(len(head))}
    torch.save(state, tmp_path / "odd.pt")
    with pytest.raises(WeightsError) as refused:
        describe_model(str(tmp_path / "odd.pt"))
    message = str(refused.value)
    assert f"its head fc.weight has shape {tuple(head.shape)}, not a Linear's (classes, 2048)" in message
    assert "pass the --arch it was trained as, and --labels with one name per class" in message and "\n" not in message


def test_imagenet_weights_get_torchvisions_names(monkeypatch):
    from inference import weights

    # Stands in for the download only (no network here); the names path is the real one.
    monkeypatch.setattr(weights, "_imagenet", lambda arch: weights.weights_for("random", arch.name, None).state)
    weights.clear_weights_cache()
    spec = describe_model("imagenet")
    weights.clear_weights_cache()
    assert spec.class_names[:2] == ("tench", "goldfish") and spec.names_source == "torchvision ImageNet categories"


def test_recipe_precedence_options_then_checkpoint_then_architecture(named):
    spec = describe_model(str(named), recipe_overrides={"crop": 200, "mean": [0.5, 0.5, 0.5]})
    assert spec.recipe == Recipe(resize=256, crop=200, mean=(0.5, 0.5, 0.5))
    assert describe_model("random", arch="efficientnet_v2_s").recipe == Recipe(resize=384, crop=384)


@pytest.mark.parametrize("overrides, refusal", [
    ({"crop": 0}, "crop must be a positive whole number"),
    ({"resize": -5}, "resize must be a positive whole number"),
    ({"crop": 300}, "crop <= resize"),
    ({"std": [0.2, 0, 0.2]}, r"std must be in \(0, 1\]"),
    ({"mean": [124, 116, 104]}, "divide by 255"),
    ({"size": 224}, "unknown recipe key"),
])
def test_bad_recipes_are_refused(overrides, refusal):
    with pytest.raises(WeightsError, match=f"the recipe options: .*{refusal}"):
        describe_model("random", recipe_overrides=overrides)


def test_a_bad_recipe_in_the_checkpoint_names_the_checkpoint(tmp_path):
    path = tmp_path / "r.pt"
    fine_tuned_checkpoint(path, 3, "plain", recipe={"resize": 100})
    with pytest.raises(WeightsError, match=r"the recipe in .*r.pt: the recipe needs crop <= resize"):
        describe_model(str(path))


def test_vit_takes_its_own_size_only_and_unknown_architectures_are_named():
    with pytest.raises(WeightsError, match="vit_b_16 takes 224x224 images only .* set crop to 224"):
        describe_model("random", arch="vit_b_16", recipe_overrides={"resize": 400, "crop": 384})
    with pytest.raises(WeightsError, match="unknown architecture 'resnet51'; choose one of resnet50, resnet18"):
        describe_model("random", arch="resnet51")


def test_the_spec_travels_to_workers_and_records(named):
    spec = describe_model(str(named))
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert ModelSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.num_classes = 3


def test_workers_build_the_described_model(named):
    spec = describe_model(str(named))
    loaded = load_model(spec)
    assert loaded.spec is spec and loaded.recipe == spec.recipe
    assert loaded.module.fc.out_features == 10
    assert torch.equal(loaded.module.fc.bias, torch.load(named, weights_only=True)["module.fc.bias"])
