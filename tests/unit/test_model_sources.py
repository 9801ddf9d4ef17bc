"""``--model SOURCE`` read by its prefix, each source's weights, recipes from timm's and Hugging Face's configs as
they save them, the lineage value, and old tables' options: all without building a model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inference.errors import WeightsError
from inference.hf_recipe import recipe_from_hf
from inference.sources import parse_model, weights_for_source
from inference.timm_models import recipe_from_timm
from inference.weights import RANDOM_WEIGHTS_SEED
from job.cli import config_from_args, config_to_argv, get_args_parser
from job.config import JobConfig
from job.errors import JobError
from job.night.options import differing, options_key
from job.output.rows import model_lineage
from preprocess.recipe import IMAGENET_RECIPE, Recipe

REPO = Path(__file__).resolve().parents[2]
HIDING = REPO / "tests" / "common" / "hidden_modules"
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]


@pytest.mark.parametrize("given, kind, name", [
    ("resnet50", "torchvision", "resnet50"),
    ("efficientnet_b0", "torchvision", "efficientnet_b0"),
    ("timm:convnext_tiny", "timm", "convnext_tiny"),
    ("hf:s3://models/vit/", "hf", "s3://models/vit/"),
    ("models:/pets/3", "mlflow", "models:/pets/3"),
    ("models:/pets@champion", "mlflow", "models:/pets@champion"),
    ("runs:/0a1b/model", "mlflow", "runs:/0a1b/model"),
])
def test_each_source_is_read_by_its_prefix(given, kind, name):
    model = parse_model(given)
    assert (model.kind, model.name, model.given) == (kind, name, given)


@pytest.mark.parametrize("given, words", [
    ("resnet51", "--model resnet51: not a model source; pass a torchvision name (resnet50, resnet18, resnet34, ...), "
                 "timm:NAME, hf:PATH, models:/NAME/VERSION or models:/NAME@ALIAS, runs:/RUN/PATH"),
    ("timm:", "--model timm:: timm:NAME names nothing after 'timm:'"),
    ("models:/", "names nothing after 'models:/'"),
])
def test_anything_else_is_refused_naming_the_forms(given, words):
    with pytest.raises(WeightsError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_model(given)


def test_each_source_takes_its_own_weights():
    timm, hf, torchvision = parse_model("timm:vit_small_patch16_224"), parse_model("hf:/m"), parse_model("resnet50")
    assert weights_for_source(torchvision, None, sample=False) == "imagenet"
    assert weights_for_source(hf, None, sample=False) == "own" and weights_for_source(hf, "random", sample=False) == "random"
    assert weights_for_source(timm, None, sample=True) == "random"  # the built-in sample runs offline
    assert weights_for_source(timm, "/w/model.safetensors", sample=False) == "/w/model.safetensors"
    refusals = [(timm, None, "needs --weights: a timm checkpoint"), (timm, "imagenet", "names torchvision's weights"),
                (hf, "/w/x.pt", "holds its own weights; leave --weights out"), (torchvision, "own", "holds no weights of its own")]
    for model, weights, words in refusals:
        with pytest.raises(WeightsError, match=words):
            weights_for_source(model, weights, sample=False)


def test_the_config_resolves_model_and_weights_and_refuses_two_models():
    config = JobConfig(input=None, output=None)
    assert (config.model, config.arch, config.weights) == ("resnet50", "resnet50", "imagenet")  # the default, as before
    config = JobConfig(input=None, output=None, model="hf:S3://b/vit", interpolation="bicubic", crop_mode="squash")
    assert (config.model, config.arch, config.weights) == ("hf:s3://b/vit", None, "own")
    assert config.recipe_overrides() == {"interpolation": "bicubic", "crop_mode": "squash"}
    assert JobConfig(input=None, output=None, arch="resnet18").model == "resnet18"  # --arch: --model's old name
    for options, words in (({"model": "resnet18", "arch": "resnet34"}, "--model resnet18 and --arch resnet34 name two models"),
                           ({"model": "timm:vit_small_patch16_224"}, "needs --weights"),
                           ({"crop_mode": "border"}, "--crop-mode: the recipe's crop_mode must be one of center, squash")):
        with pytest.raises(JobError, match=words):
            JobConfig(input=None, output=None, **options)


def test_the_command_line_reads_the_new_options_and_writes_them_back():
    parser = get_args_parser(prog="job")
    argv = ["--input", "/in", "--model", "timm:convnext_atto", "--weights", "/w/model.safetensors", "--interpolation",
            "bilinear", "--crop-mode", "squash", "--embeddings", "only"]
    config = config_from_args(parser.parse_args(argv))
    assert (config.model, config.weights, config.interpolation, config.crop_mode) == \
        ("timm:convnext_atto", "/w/model.safetensors", "bilinear", "squash")
    assert config_from_args(parser.parse_args(config_to_argv(config))) == config
    assert config_from_args(parser.parse_args(["--model", "hf:/m"])).weights == "random"  # the sample: offline


def test_timms_eval_transform_as_a_recipe():
    convnext = {"input_size": (3, 224, 224), "interpolation": "bicubic", "mean": (0.485, 0.456, 0.406),
                "std": (0.229, 0.224, 0.225), "crop_pct": 0.875, "crop_mode": "center"}
    recipe, source = recipe_from_timm(convnext, "convnext_tiny")
    assert recipe == Recipe(resize=256, crop=224, interpolation="bicubic")  # floor(224 / 0.875), as timm's eval transform
    assert source == "timm's convnext_tiny pretrained_cfg (resolve_data_config: crop_pct 0.875)"
    squash = recipe_from_timm({**convnext, "input_size": (3, 160, 160), "crop_pct": 0.95, "crop_mode": "squash"}, "x")[0]
    assert (squash.resize, squash.crop, squash.crop_mode) == (168, 160, "squash")
    for change, words in (({"crop_mode": "border"}, "crop_mode 'border'"), ({"input_size": (3, 224, 160)}, "a 224x160 input"),
                          ({"interpolation": "random"}, "interpolation 'random'")):
        with pytest.raises(WeightsError, match=f"timm:x: its pretrained_cfg asks for {change and words}.* --crop-mode"):
            recipe_from_timm({**convnext, **change}, "x")


PROCESSORS = {  # preprocessor_config.json as each processor saves it (transformers 5), less keys that change nothing
    "vit": ({"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": 224, "width": 224},
             "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
             "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]},
            Recipe(224, 224, (0.5,) * 3, (0.5,) * 3, "bilinear", "squash", "floor")),
    "clip": ({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 224}, "do_center_crop": True,
              "crop_size": {"height": 224, "width": 224}, "resample": 3, "image_mean": CLIP_MEAN, "image_std": CLIP_STD},
             Recipe(224, 224, tuple(CLIP_MEAN), tuple(CLIP_STD), "bicubic", "center", "floor")),
    "siglip": ({"image_processor_type": "SiglipImageProcessor", "size": {"height": 384, "width": 384}, "resample": 3,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]},
               Recipe(384, 384, (0.5,) * 3, (0.5,) * 3, "bicubic", "squash", "floor")),
    "dinov2": ({"image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 256}, "do_center_crop": True,
                "crop_size": {"height": 224, "width": 224}, "resample": 3, "image_mean": [0.485, 0.456, 0.406],
                "image_std": [0.229, 0.224, 0.225]}, Recipe(256, 224, interpolation="bicubic", crop_offset="floor")),
    "convnext": ({"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 224}, "crop_pct": 0.875,
                  "resample": 3, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
                 Recipe(256, 224, interpolation="bicubic", crop_offset="floor")),
}  # every Hugging Face processor starts its centre crop at (h - crop) // 2


@pytest.mark.parametrize("kind", list(PROCESSORS))
def test_each_processors_config_as_a_recipe(kind):
    processor, expected = PROCESSORS[kind]
    recipe, source = recipe_from_hf(processor, "hf:/m")
    assert recipe == expected and source == f"{processor['image_processor_type']} of hf:/m (preprocessor_config.json)"


@pytest.mark.parametrize("change, words", [
    ({"resample": 1}, "resamples with PIL kernel 1"),
    ({"size": {"height": 224, "width": 192}}, r"its size \{'height': 224, 'width': 192\} is not a square"),
    ({"do_center_crop": False}, "resizes the short side to 224 with no crop"),
    ({"rescale_factor": 1.0}, "rescales pixels by 1.0"),
    ({"do_resize": False}, "does not resize"),
])
def test_a_processor_the_recipe_cannot_say_is_refused_naming_the_options(change, words):
    with pytest.raises(WeightsError, match=f"hf:/m: CLIPImageProcessor.*{words}.*pass the recipe options instead"):
        recipe_from_hf({**PROCESSORS["clip"][0], **change}, "hf:/m")


def test_the_lineage_names_the_source_and_says_random_weights_are_random():
    assert model_lineage("resnet50", "random", None) == f"resnet50 random seed {RANDOM_WEIGHTS_SEED}"
    assert model_lineage("timm:convnext_tiny", "/w.pt", "ab" * 32) == "timm:convnext_tiny sha256:abababababababab"
    assert model_lineage("mlflow:models:/pets/3", "own", "cd" * 32) == "mlflow:models:/pets/3 sha256:cdcdcdcdcdcdcdcd"
    assert model_lineage("resnet50", "imagenet", None) == "resnet50 torchvision imagenet"


def test_an_old_tables_options_compare_equal_and_another_source_does_not():
    old = {"arch": "resnet50", "names_sha256": None, "weights_sha256": None, "recipe": IMAGENET_RECIPE.to_dict()}
    assert options_key(old) == options_key({**old, "source": "resnet50"})  # written before the model's source: its arch
    assert differing(old, {**old, "arch": None, "source": "timm:resnet50"}) == ["arch", "source"]


def test_a_missing_extra_is_one_line_naming_the_install_before_any_work(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{HIDING}{os.pathsep}{REPO}", "HIDE_MODULES": "timm"}
    done = subprocess.run([sys.executable, "-m", "runners.local_job", "--model", "timm:test_vit", "--output",
                           str(tmp_path / "out")], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    said = done.stderr.splitlines()  # the sample's line ("no --input: ..."), then the one error line
    assert done.returncode == 2 and said[-1] == "error: --model timm:test_vit needs 'timm', which the [timm] extra " \
           "brings: pip install 'streaming-batch-inference[timm]'", done.stderr
    assert not (tmp_path / "out").exists()


def test_the_default_model_imports_no_model_library():
    code = ("import sys; from job.config import JobConfig; from job.execution import model_for; from inference import "
            "load_model; load_model(model_for(JobConfig(input=None, output=None, weights='random'))); "
            "print(sorted(m for m in ('timm', 'transformers', 'mlflow', 'safetensors') if sys.modules.get(m) is not None))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["[]"], out.stderr
