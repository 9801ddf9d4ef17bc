"""timm, Hugging Face and MLflow models as the driver describes them and a worker loads them: real models, made and
saved here (random-initialised, offline), and each bad one refused in one line before any image is read."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from inference import ModelSpec, WeightsError, describe_model, load_model
from inference.network import network_for
from inference.features import FeaturesAndLogits
from job.config import JobConfig
from job.errors import JobError
from job.execution import model_for
from preprocess.recipe import Recipe
from tests.common import model_sources as sources
from tests.common.extras import library_or_skip

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Every source's model, saved once for the module."""
    library_or_skip("timm", "timm")
    library_or_skip("transformers", "hf")
    root = tmp_path_factory.mktemp("models")
    models = {"efficientnet": sources.timm_checkpoint(root / "efficientnet.pt", "test_efficientnet"),
              "vit": sources.timm_checkpoint(root / "vit.safetensors", "test_vit", safetensors=True)}
    for kind in ("vit", "clip", "siglip", "dinov2"):
        sources.hf_folder(root / f"hf-{kind}", kind)
    return root, models


def test_a_timm_checkpoint_gives_its_classes_timms_recipe_and_its_digest(made):
    root, models = made
    spec = describe_model(str(root / "efficientnet.pt"), model="timm:test_efficientnet")
    assert (spec.source, spec.arch, spec.location, spec.num_classes) == ("timm:test_efficientnet", "test_efficientnet",
                                                                         "test_efficientnet", sources.CLASSES)
    assert spec.recipe == Recipe(resize=168, crop=160, interpolation="bicubic")  # floor(160 / 0.95), timm's bicubic
    assert spec.recipe_source.startswith("timm's test_efficientnet pretrained_cfg") and len(spec.weights_sha256) == 64
    assert spec.embedding_dim == models["efficientnet"].num_features and ModelSpec.from_dict(spec.to_dict()) == spec
    loaded = load_model(spec)
    images = torch.rand(3, 3, 160, 160)
    with torch.inference_mode():
        features, logits = FeaturesAndLogits(loaded.module, loaded.head)(images)
        expected = models["efficientnet"]
        torch.testing.assert_close(logits, expected(images))
        torch.testing.assert_close(features, expected.forward_head(expected.forward_features(images), pre_logits=True))


def test_a_timm_safetensors_file_and_options_over_timms_recipe(made):
    root, _ = made
    spec = describe_model(str(root / "vit.safetensors"), model="timm:test_vit", recipe_overrides={"interpolation": "bilinear"})
    assert spec.recipe == Recipe(resize=168, crop=160, mean=(0.5,) * 3, std=(0.5,) * 3, interpolation="bilinear")
    assert spec.recipe_source.endswith("; interpolation from the options")
    # timm's test_vit takes any size its 16 px patches divide (dynamic_img_size), and no other.
    with pytest.raises(WeightsError, match=r"timm:test_vit does not run on 200x200 images \(AssertionError: Input height "
                                           r"\(200\) should be divisible by patch size \(16\)\.\); pass --crop"):
        describe_model(str(root / "vit.safetensors"), model="timm:test_vit", recipe_overrides={"resize": 256, "crop": 200})


def test_timms_imagenet_label_info_names_a_head_of_its_size(tmp_path):
    library_or_skip("timm", "timm")
    import timm

    torch.save(timm.create_model("test_resnet", pretrained=False).state_dict(), tmp_path / "in1k.pt")  # 1000 classes
    spec = describe_model(str(tmp_path / "in1k.pt"), model="timm:test_resnet")
    assert spec.names_source == "timm's imagenet-1k label info" and spec.class_names[0] == "tench, Tinca tinca"
    assert [name for name in spec.class_names if name.startswith("crane")] == ["crane (n02012849)", "crane (n03126707)"]
    assert describe_model("random", model="timm:test_resnet").class_names is None  # random weights name nothing


def test_weights_of_another_timm_model_or_a_name_timm_lacks_are_refused(made):
    root, _ = made
    with pytest.raises(WeightsError, match=r"efficientnet.pt: not a timm test_vit state dict: \d+ missing keys \(.*\); "
                                           r"\d+ unexpected keys .*; pass the timm:NAME it was trained as"):
        describe_model(str(root / "efficientnet.pt"), model="timm:test_vit")
    with pytest.raises(WeightsError, match=r"--model timm:no_such_net: Unknown model \(no_such_net\); timm.list_models"):
        describe_model("random", model="timm:no_such_net")


@pytest.mark.parametrize("kind, arch, classes, dim, crop_mode", [
    ("vit", "ViTForImageClassification", sources.CLASSES, 32, "squash"),
    ("clip", "CLIPModel", 0, 16, "center"),  # the projection's size, from a whole CLIP folder
    ("siglip", "SiglipModel", 0, 32, "squash"),
    ("dinov2", "Dinov2Model", 0, 32, "center"),
])
def test_a_hugging_face_folder_is_a_classifier_or_an_embedder_with_its_processors_recipe(made, kind, arch, classes, dim, crop_mode):
    root, _ = made
    folder = root / f"hf-{kind}"
    spec = describe_model("own", model=f"hf:{folder}")
    assert (spec.source, spec.arch, spec.num_classes, spec.embedding_dim, spec.recipe.crop_mode) == \
        (f"hf:{folder}", arch, classes, dim, crop_mode)
    assert spec.recipe_source.endswith(f"of hf:{folder} (preprocessor_config.json)") and len(spec.weights_sha256) == 64
    assert (spec.class_names == tuple(sources.NAMES)) == (kind == "vit")  # id2label, when it names the classes
    assert (load_model(spec).head is None) == (classes == 0)


def test_an_embedder_needs_embeddings_only(made):
    root, _ = made
    with pytest.raises(JobError, match=r"--model hf:.*hf-clip is an embedder \(CLIP's image embedding: .*\): it has no "
                                       r"classes to predict; pass --embeddings only"):
        model_for(JobConfig(input=None, output=None, model=f"hf:{root / 'hf-clip'}", embeddings="with"))


def test_a_clip_towers_own_folder_reads_as_the_whole_models(made, tmp_path):
    import transformers

    root, _ = made
    config = transformers.AutoConfig.from_pretrained(root / "hf-clip", local_files_only=True)
    config.vision_config.projection_dim = config.projection_dim  # the tower's own config does not say it
    tower = transformers.CLIPVisionModelWithProjection.from_pretrained(root / "hf-clip", config=config.vision_config,
                                                                       local_files_only=True)
    tower.save_pretrained(tmp_path / "tower")
    shutil.copy(root / "hf-clip" / "preprocessor_config.json", tmp_path / "tower")
    whole, alone = (describe_model("own", model=f"hf:{path}") for path in (root / "hf-clip", tmp_path / "tower"))
    images = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        torch.testing.assert_close(load_model(whole).module(images), load_model(alone).module(images))


@pytest.mark.parametrize("damage, words", [
    ("config", "no config.json in the folder; not a folder written by save_pretrained"),
    ("processor", "no preprocessor_config.json in the folder; save the model's image processor beside it"),
    ("weights", r"no weights in the folder \(model.safetensors, model.safetensors.index.json, pytorch_model.bin, "
                r"pytorch_model.bin.index.json\); save the model with save_pretrained, or pass --weights random"),
    ("shapes", r"its model.safetensors does not fit its config.json: .*shapes differ \("),
    ("architecture", r"holds a ViTModel: neither an image classifier \(a class AutoModelForImageClassification loads\) "
                     "nor an embedder"),
])
def test_a_folder_that_is_not_a_model_or_whose_weights_do_not_fit_is_refused(made, tmp_path, damage, words):
    root, _ = made
    folder = shutil.copytree(root / "hf-vit", tmp_path / "vit")
    config = json.loads((folder / "config.json").read_text())
    if damage in ("config", "processor", "weights"):
        (folder / {"config": "config.json", "processor": "preprocessor_config.json", "weights": "model.safetensors"}[damage]).unlink()
    elif damage == "shapes":
        (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 48}))
    else:
        (folder / "config.json").write_text(json.dumps({**config, "architectures": ["ViTModel"]}))
    with pytest.raises(WeightsError, match=words):
        describe_model("own", model=f"hf:{folder}")


def test_a_worker_refuses_a_folder_changed_after_the_driver_described_it(made, tmp_path):
    root, _ = made
    folder = shutil.copytree(root / "hf-dinov2", tmp_path / "dinov2")
    spec = describe_model("own", model=f"hf:{folder}")
    import transformers

    model = transformers.Dinov2Model.from_pretrained(folder, local_files_only=True)
    with torch.no_grad():
        next(model.parameters()).add_(1)
    model.save_pretrained(folder)
    network_for.cache_clear()  # a worker's own process: it reads the folder again
    with pytest.raises(WeightsError, match=r"its weights changed after the job checked them"):
        load_model(spec)


def test_random_weights_work_with_every_source(made):
    root, _ = made
    for model in ("timm:test_vit", f"hf:{root / 'hf-vit'}"):
        spec = describe_model("random", model=model)
        assert spec.weights_sha256 is None and spec.num_classes > 0
        first, again = (load_model(spec).module.state_dict() for _ in range(2))
        assert all(torch.equal(first[key], again[key]) for key in first)  # seeded: the same in every process


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A sqlite MLflow store with ``pets`` version 1 (alias ``champion``), MLflow's current store for the module."""
    library_or_skip("mlflow", "mlflow")
    import mlflow

    yield sources.mlflow_registered(tmp_path_factory.mktemp("mlflow"))
    mlflow.set_tracking_uri(None)


def test_an_mlflow_model_by_version_alias_or_run_is_pinned_to_its_version(registry):
    by_version = describe_model("own", model="models:/pets/1")
    by_alias = describe_model("own", model="models:/pets@champion")
    assert by_version == by_alias and by_alias.source == "mlflow:models:/pets/1"
    assert (by_alias.num_classes, by_alias.class_names, by_alias.arch) == (sources.CLASSES, tuple(sources.NAMES), "torch.export program")
    assert by_alias.recipe == Recipe(resize=256, crop=224, mean=(0.5,) * 3, std=(0.25,) * 3)
    assert by_alias.store == (registry[0], registry[0]) and by_alias.embedding_dim == 512
    import mlflow

    run = mlflow.MlflowClient().get_model_version("pets", "1").run_id
    by_run = describe_model("own", model=f"runs:/{run}/model")
    assert by_run.source == f"mlflow:runs:/{run}/model" and by_run.weights_sha256 == by_alias.weights_sha256


@pytest.mark.parametrize("uri, words", [
    ("models:/pets/9", r"--model models:/pets/9 does not resolve in MLflow's registry at sqlite:.* \(Model Version "
                       r"\(name=pets, version=9\) not found\.?\)"),
    ("models:/pets@nope", "alias nope not found"),
    ("models:/cats/1", "cats"),
])
def test_an_mlflow_uri_that_does_not_resolve_is_one_line(registry, uri, words):
    with pytest.raises(WeightsError, match=words):
        describe_model("own", model=uri)


def test_a_pickled_mlflow_model_loads_as_mlflow_allows_unpickling(tmp_path, monkeypatch, registry):
    import mlflow

    try:
        sources.mlflow_registered(tmp_path, name="pickled", pickle=True)  # MLflow 2's format, 3's on request
        spec = describe_model("own", model="models:/pickled@champion")  # MLflow 3.17 allows it by default
        assert (spec.arch, spec.num_classes) == ("ResNet", sources.CLASSES) and load_model(spec).head == "fc"
        monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "false")  # a user who forbids unpickling
        network_for.cache_clear()
        with pytest.raises(WeightsError, match="a pickled model .* MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true"):
            describe_model("own", model="models:/pickled/1")
    finally:
        mlflow.set_tracking_uri(registry[0])


def test_a_worker_loads_a_registered_model_from_the_store_the_driver_found_it_in(registry, tmp_path):
    """A worker's MLflow knows no store (its own default: a sqlite file in its working directory); MLflow resolves a
    models:/ URI there whatever store it is handed, so the worker names the driver's."""
    import os
    import pickle
    import subprocess
    import sys

    spec = describe_model("own", model="models:/pets@champion")
    (tmp_path / "spec.pickle").write_bytes(pickle.dumps(spec))
    worker = ("import pickle, sys; from inference import load_model; "
              "print(load_model(pickle.load(open('spec.pickle', 'rb'))).head)")
    env = {name: value for name, value in os.environ.items() if not name.startswith("MLFLOW_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-c", worker], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]


def test_a_timm_distilled_model_reads_its_two_heads_as_one(made):
    """deit_*_distilled_*: two heads whose logits it averages, read as one Linear over both tokens side by side."""
    import timm

    from inference.weights import RANDOM_WEIGHTS_SEED

    spec = describe_model("random", model="timm:deit_tiny_distilled_patch16_224")
    assert (spec.num_classes, spec.embedding_dim) == (1000, 2 * 192) and spec.embedding.startswith("its 2 heads' inputs")
    loaded = load_model(spec)
    torch.manual_seed(RANDOM_WEIGHTS_SEED)
    own = timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False).eval()  # the same seeded weights
    images = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        features, logits = FeaturesAndLogits(loaded.module, loaded.head)(images)
        tokens = own.forward_features(images)
        torch.testing.assert_close(logits, own(images), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(features, torch.cat([tokens[:, 0], tokens[:, 1]], dim=1))


def test_a_timm_hub_name_is_built_from_the_config_the_hugging_face_cache_holds(made, tmp_path, monkeypatch):
    import huggingface_hub.constants
    import timm
    from timm.models import save_for_hf

    root, _ = made
    model = timm.create_model("test_vit", pretrained=False, num_classes=sources.CLASSES)
    save_for_hf(model, tmp_path / "saved", safe_serialization=True)
    snapshot = tmp_path / "hub" / "models--our-org--tiny-vit" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd")
    (snapshot / "config.json").write_bytes((tmp_path / "saved" / "config.json").read_bytes())
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # this machine's cache
    spec = describe_model(str(tmp_path / "saved" / "model.safetensors"), model="timm:hf-hub:our-org/tiny-vit")
    assert (spec.source, spec.num_classes, spec.recipe.crop) == ("timm:hf-hub:our-org/tiny-vit", sources.CLASSES, 160)


def test_a_hugging_face_distilled_classifier_and_a_multi_label_one(tmp_path):
    from tests.common.hf_folders import hf_classifier

    distilled = hf_classifier(tmp_path / "deit", "deit-distilled")
    spec = describe_model("own", model=f"hf:{distilled}")
    assert (spec.arch, spec.num_classes, spec.embedding_dim, spec.activation) == \
        ("DeiTForImageClassificationWithTeacher", sources.CLASSES, 2 * 32, "softmax")
    assert spec.embedding.startswith("its 2 heads' inputs side by side (cls_classifier, distillation_classifier)")
    import transformers

    own = transformers.AutoModelForImageClassification.from_pretrained(distilled, local_files_only=True).eval()
    images = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        torch.testing.assert_close(load_model(spec).module(images), own(pixel_values=images).logits)
    multi = describe_model("own", model=f"hf:{hf_classifier(tmp_path / 'multi', 'vit-multilabel')}")
    assert multi.activation == "multi_label" and ModelSpec.from_dict(multi.to_dict()) == multi


@pytest.mark.parametrize("data, words", [
    (b"", r"its pytorch_model.bin is empty \(0 bytes\)"),
    (b"PK\x03\x04 not a zip at all", r"its pytorch_model.bin cannot be read \("),
])
def test_a_damaged_pytorch_model_bin_is_one_line(made, tmp_path, data, words):
    root, _ = made
    folder = shutil.copytree(root / "hf-vit", tmp_path / "vit")
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(data)
    with pytest.raises(WeightsError, match=words):
        describe_model("own", model=f"hf:{folder}")
