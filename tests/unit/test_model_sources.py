"""``--model SOURCE`` read by its prefix, each source's weights, recipes from timm's and Hugging Face's configs as
they save them, the lineage value, and old tables' options: all without building a model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inference.errors import WeightsError
from inference.hf_recipe import draft_from_processor
from inference.model_recipe import OPTIONS
from inference.sources import parse_model, weights_for_source
from inference.timm_recipe import recipe_from_timm
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
    recipe, source = recipe_from_timm(convnext, "convnext_tiny").recipe("timm:convnext_tiny")
    assert recipe == Recipe(resize=256, crop=224, interpolation="bicubic")  # floor(224 / 0.875), as timm's eval transform
    assert source == "timm's convnext_tiny pretrained_cfg (resolve_data_config: crop_pct 0.875)"
    squash = recipe_from_timm({**convnext, "input_size": (3, 160, 160), "crop_pct": 0.95, "crop_mode": "squash"}, "x")
    squashed = squash.recipe("timm:x")[0]
    assert (squashed.resize, squashed.crop, squashed.crop_mode) == (168, 160, "squash")


@pytest.mark.parametrize("change, words, missing", [
    ({"crop_mode": "border"}, "its pretrained_cfg asks for crop_mode 'border'", "--crop-mode"),
    ({"input_size": (3, 224, 160)}, r"its pretrained_cfg asks for a 224x160 input \(the recipe crops squares\)",
     "--resize --crop"),
    ({"interpolation": "random"}, "its pretrained_cfg asks for interpolation 'random'", "--interpolation"),
])
def test_what_timms_config_asks_and_the_recipe_cannot_say_the_options_can(change, words, missing):
    convnext = {"input_size": (3, 224, 224), "interpolation": "bicubic", "mean": (0.485, 0.456, 0.406),
                "std": (0.229, 0.224, 0.225), "crop_pct": 0.875, "crop_mode": "center"}
    draft = recipe_from_timm({**convnext, **change}, "x")
    with pytest.raises(WeightsError, match=f"^timm:x: {words}, which the recipe has no form for; pass {missing} to run it"):
        draft.recipe("timm:x")
    given = {"crop_mode": "center", "resize": 256, "crop": 224, "interpolation": "bilinear"}
    recipe, source = draft.over({key: given[key] for key in draft.unsaid}, OPTIONS).recipe("timm:x")
    assert source.endswith(" from the options") and recipe.crop == 224


CLIP = {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 224},
        "do_center_crop": True, "crop_size": {"height": 224, "width": 224}, "resample": 3, "do_rescale": True,
        "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD}
BASE = {**CLIP, "do_center_crop": None, "crop_size": None}
PROCESSORS = {  # a processor's settings as transformers resolves them (class defaults filled in), less keys of no effect
    "vit": ({**BASE, "image_processor_type": "ViTImageProcessor", "size": {"height": 224, "width": 224}, "resample": 2,
             "image_mean": [0.5] * 3, "image_std": [0.5] * 3},
            Recipe(224, 224, (0.5,) * 3, (0.5,) * 3, "bilinear", "squash", "floor")),
    "clip": (CLIP, Recipe(224, 224, tuple(CLIP_MEAN), tuple(CLIP_STD), "bicubic", "center", "floor")),
    "dinov2": ({**CLIP, "image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 256},
                "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
               Recipe(256, 224, interpolation="bicubic", crop_offset="floor")),
    "convnext": ({**BASE, "image_processor_type": "ConvNextImageProcessor", "crop_pct": 0.875,
                  "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
                 Recipe(256, 224, interpolation="bicubic", crop_offset="floor")),
    "poolformer": ({**CLIP, "image_processor_type": "PoolFormerImageProcessor", "crop_pct": 0.9,
                    "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
                   Recipe(248, 224, interpolation="bicubic", crop_offset="floor")),  # int(224 / 0.9), then the crop
    "levit": ({**CLIP, "image_processor_type": "LevitImageProcessor", "image_mean": [0.485, 0.456, 0.406],
               "image_std": [0.229, 0.224, 0.225]},
              Recipe(256, 224, interpolation="bicubic", crop_offset="floor")),  # int(256 / 224 * 224)
    "mobilevit": ({**CLIP, "image_processor_type": "MobileViTImageProcessor", "size": {"shortest_edge": 288},
                   "crop_size": {"height": 256, "width": 256}, "resample": 2, "do_normalize": None,
                   "do_flip_channel_order": True},
                  Recipe(288, 256, (0.0,) * 3, (1.0,) * 3, "bilinear", "center", "floor", "bgr")),  # 0..1, B, G, R
    "efficientnet": ({**BASE, "image_processor_type": "EfficientNetImageProcessor", "size": {"height": 224, "width": 224},
                      "image_mean": [0.5] * 3, "image_std": [0.5] * 3, "include_top": True, "rescale_offset": False},
                     Recipe(224, 224, (0.5,) * 3, (0.25,) * 3, "bicubic", "squash", "floor")),  # include_top: std twice
}  # every Hugging Face processor starts its centre crop at (h - crop) // 2


@pytest.mark.parametrize("kind", list(PROCESSORS))
def test_each_processors_settings_as_a_recipe(kind):
    settings, expected = PROCESSORS[kind]
    recipe, source = draft_from_processor(settings, "hf:/m").recipe("hf:/m")
    assert recipe == expected and source == f"{settings['image_processor_type']} of hf:/m (preprocessor_config.json)"


def test_a_rescale_and_normalisation_of_any_factor_is_one_mean_and_std():
    raw = draft_from_processor({**CLIP, "do_rescale": False, "do_normalize": False}, "hf:/m").recipe("hf:/m")[0]
    assert raw.mean == (0.0,) * 3 and raw.std == pytest.approx((1 / 255,) * 3)  # pixels fed as 0..255
    offset = {**PROCESSORS["efficientnet"][0], "rescale_factor": 1 / 127.5, "rescale_offset": True, "include_top": False}
    recipe = draft_from_processor(offset, "hf:/m").recipe("hf:/m")[0]  # x / 127.5 - 1, then (- 0.5) / 0.5
    assert recipe.mean == pytest.approx((0.75,) * 3) and recipe.std == pytest.approx((0.25,) * 3)
    # The same settings under a type that does not read include_top or rescale_offset: not applied.
    assert draft_from_processor({**offset, "image_processor_type": "ViTImageProcessor"}, "hf:/m").recipe("hf:/m")[0].std \
        == pytest.approx((0.25,) * 3)


@pytest.mark.parametrize("change, words, missing", [
    ({"resample": 0}, r"it resamples with PIL kernel 0 \(nearest\)", "--interpolation"),
    ({"size": {"height": 224, "width": 192}}, r"it resizes to \{'height': 224, 'width': 192\}", "--resize --crop"),
    ({"do_center_crop": False}, "it resizes the short side to 224 with no crop", "--crop"),
    ({"crop_size": {"height": 256, "width": 256}}, r"it crops 256 from the short side to 224 \(the processor pads",
     "--resize --crop"),
    ({"do_resize": False}, r"it does not resize \(do_resize false\)", "--resize --crop --crop-mode"),
    ({"image_mean": [-0.5] * 3}, r"its rescale \(factor 0.00392157\) and normalisation feed the model values",
     "--mean --std"),
    ({"image_processor_type": "Siglip2ImageProcessor"}, "Siglip2ImageProcessor is a processor type whose own steps",
     "--resize --crop --mean --std --interpolation --crop-mode"),
])
def test_what_a_processor_does_and_the_recipe_cannot_say_is_refused_naming_the_options_that_can(change, words, missing):
    draft = draft_from_processor({**CLIP, **change}, "hf:/m")
    with pytest.raises(WeightsError, match=f"^hf:/m: {words}.*; pass {missing} to run it with a recipe you name$"):
        draft.recipe("hf:/m")
    options = {"resize": 256, "crop": 224, "mean": (0.5,) * 3, "std": (0.5,) * 3, "interpolation": "bicubic",
               "crop_mode": "center"}
    recipe, source = draft.over(options, OPTIONS).recipe("hf:/m")  # every option given: the options' recipe runs
    assert (recipe.resize, recipe.crop, recipe.mean) == (256, 224, (0.5,) * 3) and source.endswith("from the options")


def test_the_lineage_names_the_source_and_says_random_weights_are_random():
    assert model_lineage("resnet50", "random", None) == f"resnet50 random seed {RANDOM_WEIGHTS_SEED}"
    assert model_lineage("timm:convnext_tiny", "/w.pt", "ab" * 32) == "timm:convnext_tiny sha256:abababababababab"
    assert model_lineage("mlflow:models:/pets/3", "own", "cd" * 32) == "mlflow:models:/pets/3 sha256:cdcdcdcdcdcdcdcd"
    assert model_lineage("resnet50", "imagenet", None) == "resnet50 torchvision imagenet"


def test_an_old_tables_options_compare_equal_and_another_source_does_not():
    old = {"arch": "resnet50", "names_sha256": None, "weights_sha256": None, "recipe": IMAGENET_RECIPE.to_dict()}
    assert options_key(old) == options_key({**old, "source": "resnet50"})  # written before the model's source: its arch
    assert differing(old, {**old, "arch": None, "source": "timm:resnet50"}) == ["arch", "source"]


def test_an_old_tables_key_holds_after_the_channel_order_and_the_scores_were_recorded():
    """Options recorded before a recipe's channel order and a head's activation were: the same key as today's for a
    model that takes RGB and is scored by softmax (or a one-logit sigmoid); a BGR or a multi-label model's differ."""
    old_recipe = {k: v for k, v in IMAGENET_RECIPE.to_dict().items() if k != "channel_order"}
    old = {"source": "hf:/m", "arch": "ViTForImageClassification", "recipe": old_recipe}
    now = {**old, "recipe": IMAGENET_RECIPE.to_dict(), "activation": "softmax"}
    assert options_key(old) == options_key(now) and differing(old, now) == []
    assert options_key(old) == options_key({**now, "activation": "sigmoid"})
    assert differing(old, {**now, "activation": "multi_label"}) == ["activation"]
    assert differing(old, {**now, "recipe": {**now["recipe"], "channel_order": "bgr"}}) == ["recipe"]


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
