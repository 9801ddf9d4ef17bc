"""Each Hugging Face image processor type the recipe reads, against ``AutoImageProcessor`` itself: the pixels the
exact CPU path makes from the recipe, normalised and ordered as the predictor does, are what the processor feeds
the model (both of transformers 5's backends), to within Pillow's rounding. Legacy folders (``"size": 224``) read as
transformers reads them; a type whose own steps the recipe does not read is refused, not approximated."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from inference.errors import WeightsError
from inference.hf_processor import processor_draft
from job.sample.synthetic import encode, textured_image
from preprocess import preprocess_batch
from tests.common.extras import library_or_skip

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
# 508x375 and 427x640: centre crops that start on half pixels; a small one that most recipes enlarge.
JPEGS = [encode(textured_image(np.random.default_rng(seed), *size), "jpeg")
         for seed, size in enumerate([(508, 375), (427, 640), (200, 150)])]
# Levels of what the model is fed: the exact path is Pillow's own resize, as the PIL backend's; the torchvision
# backend rounds its resize once more (docs/model.md's table: 0.07 mean for SigLIP's).
MEAN_LEVELS, MAX_LEVELS = 0.15, 6.0
IMAGENET = dict(image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])


def _processors() -> dict[str, object]:
    import transformers as t

    return {  # each type's defaults, or the settings its best-known hub folder publishes
        "ViTImageProcessor": t.ViTImageProcessor(),
        "DeiTImageProcessor": t.DeiTImageProcessor(),  # 256 squash, 224 crop, bicubic
        "BeitImageProcessor": t.BeitImageProcessor(size={"height": 256, "width": 256}, do_center_crop=True),
        "CLIPImageProcessor": t.CLIPImageProcessor(),
        "SiglipImageProcessor": t.SiglipImageProcessor(),
        "BitImageProcessor": t.BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224},
                                                 do_center_crop=True, resample=3, **IMAGENET),  # DINOv2's
        "MobileNetV1ImageProcessor": t.MobileNetV1ImageProcessor(),
        "MobileNetV2ImageProcessor": t.MobileNetV2ImageProcessor(),
        "ConvNextImageProcessor": t.ConvNextImageProcessor(size={"shortest_edge": 224}),  # crop_pct 224/256
        "ConvNextImageProcessor 384": t.ConvNextImageProcessor(),  # a squash from 384 up
        "PoolFormerImageProcessor": t.PoolFormerImageProcessor(),
        "LevitImageProcessor": t.LevitImageProcessor(),
        "MobileViTImageProcessor": t.MobileViTImageProcessor(size={"shortest_edge": 288}, resample=2,
                                                             crop_size={"height": 256, "width": 256}),
        "EfficientNetImageProcessor": t.EfficientNetImageProcessor(size={"height": 224, "width": 224}, resample=3,
                                                                   image_std=[0.47853944, 0.4732864, 0.47434163]),
        PLAIN: t.PvtImageProcessor(),
    }


LEGACY = {  # preprocessor_config.json as google/vit-base-patch16-224 and openai/clip-vit-base-patch32 publish theirs
    "vit (size 224: a square)": {"image_processor_type": "ViTImageProcessor", "size": 224, "do_normalize": True,
                                 "image_mean": [0.5] * 3, "image_std": [0.5] * 3, "resample": 2},
    "clip (size 224: the short side)": {"feature_extractor_type": "CLIPFeatureExtractor", "size": 224, "crop_size": 224,
                                        "do_center_crop": True, "resample": 3, "do_normalize": True,
                                        "image_mean": [0.48145466, 0.4578275, 0.40821073],
                                        "image_std": [0.26862954, 0.26130258, 0.27577711]},
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every case's folder, holding only its preprocessor_config.json."""
    library_or_skip("transformers", "hf")
    root = tmp_path_factory.mktemp("processors")
    folders = {}
    for n, (name, processor) in enumerate(_processors().items()):
        processor.save_pretrained(root / str(n))
        folders[name] = root / str(n)
    for n, (name, config) in enumerate(LEGACY.items()):
        folder = root / f"legacy-{n}"
        folder.mkdir()
        (folder / "preprocessor_config.json").write_text(json.dumps(config))
        folders[name] = folder
    return folders


PLAIN = "PvtImageProcessor (a type the table lacks, running the base pipeline)"
CASES = ["ViTImageProcessor", "DeiTImageProcessor", "BeitImageProcessor", "CLIPImageProcessor", "SiglipImageProcessor",
         "BitImageProcessor", "MobileNetV1ImageProcessor", "MobileNetV2ImageProcessor", "ConvNextImageProcessor",
         "ConvNextImageProcessor 384", "PoolFormerImageProcessor", "LevitImageProcessor", "MobileViTImageProcessor",
         "EfficientNetImageProcessor", PLAIN, *LEGACY]  # _processors' keys, and the legacy folders


@pytest.mark.parametrize("backend", ["torchvision", "pil"])
@pytest.mark.parametrize("name", CASES)
def test_the_recipe_feeds_the_model_what_its_own_processor_does(saved, name, backend):
    import transformers

    recipe, _ = processor_draft(str(saved[name]), "hf:m").recipe("hf:m")
    ours = preprocess_batch(JPEGS, recipe, cpu_resize="exact").pixels.astype(np.float64) / 255  # (N, H, W, 3)
    ours = (ours - np.array(recipe.mean)) / np.array(recipe.std)  # as the predictor normalises, R, G, B
    ours, std = (ours[..., ::-1], np.array(recipe.std)[::-1]) if recipe.channel_order == "bgr" else (ours, np.array(recipe.std))
    processor = transformers.AutoImageProcessor.from_pretrained(saved[name], local_files_only=True, backend=backend)
    images = [Image.open(io.BytesIO(data)).convert("RGB") for data in JPEGS]
    theirs = processor(images=images, return_tensors="np")["pixel_values"].transpose(0, 2, 3, 1)
    assert theirs.shape == ours.shape
    levels = np.abs(ours - theirs) * std * 255  # back to levels of the pixels the model was fed
    assert levels.mean() <= MEAN_LEVELS and levels.max() <= MAX_LEVELS, (levels.mean(), levels.max())


def test_mobilevits_default_crop_larger_than_its_resize_is_refused_naming_the_options(tmp_path):
    library_or_skip("transformers", "hf")
    import transformers

    transformers.MobileViTImageProcessor().save_pretrained(tmp_path)  # shortest_edge 224, crop 256: padded with black
    with pytest.raises(WeightsError, match=r"^hf:m: it crops 256 from the short side to 224 \(the processor pads the "
                                           r"rest with black\); pass --resize --crop to run it with a recipe you name$"):
        processor_draft(str(tmp_path), "hf:m").recipe("hf:m")


def test_a_type_with_steps_the_recipe_does_not_read_is_refused_not_approximated(tmp_path):
    library_or_skip("transformers", "hf")
    import transformers

    transformers.Siglip2ImageProcessor().save_pretrained(tmp_path)  # patches of the image's own aspect: no size
    with pytest.raises(WeightsError, match=r"^hf:m: Siglip2ImageProcessor is a processor type whose own steps the recipe "
                                           r"does not read .*; pass --resize --crop --mean --std --interpolation --crop-mode"):
        processor_draft(str(tmp_path), "hf:m").recipe("hf:m")
