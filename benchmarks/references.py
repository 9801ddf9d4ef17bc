"""The models' own eval transforms, as their libraries build them, and the ``Recipe`` each maps to.

Use ``references()`` to hold our pixels against what torchvision's weights, timm and Hugging Face image processors
give for the same image (``benchmarks.recipe_tolerance_bench``, tests/unit/test_references.py). Every reference
is built offline: torchvision's weights' ``transforms()`` and timm's ``resolve_data_config`` + ``create_transform``
need no download, and the Hugging Face processors are loaded by ``AutoImageProcessor`` from a folder holding only
the ``preprocessor_config.json`` the hub's model carries (the fields that shape pixels). ``pixels(reference,
image)`` gives what the model would be fed, un-normalised back to levels (float, (crop, crop, 3)).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image

from preprocess.recipe import Recipe

RGB = tuple[float, float, float]
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)


@dataclass(frozen=True)
class Reference:
    name: str  # the model and the library whose transform this is
    recipe: Recipe  # what the model's config maps to
    build: Callable[[], Callable[[Image.Image], np.ndarray]]  # -> image -> (3, crop, crop) float, normalised


def pixels(reference: Reference, transform: Callable[[Image.Image], np.ndarray], image: Image.Image) -> np.ndarray:
    """The reference's model input for ``image``, un-normalised to levels: (crop, crop, 3) float."""
    mean = np.asarray(reference.recipe.mean, np.float64)[:, None, None]
    std = np.asarray(reference.recipe.std, np.float64)[:, None, None]
    return ((np.asarray(transform(image), np.float64) * std + mean) * 255).transpose(1, 2, 0)


def _torchvision(arch: str) -> Callable[[], Callable]:
    def build():
        from torchvision.models import get_model_weights

        transform = get_model_weights(arch).DEFAULT.transforms()
        return lambda image: transform(image).numpy()
    return build


def _timm(model: str) -> Callable[[], Callable]:
    def build():
        import timm

        net = timm.create_model(model, pretrained=False, num_classes=0)
        transform = timm.data.create_transform(**timm.data.resolve_data_config({}, model=net))
        return lambda image: transform(image).numpy()
    return build


def _hugging_face(config: dict, backend: str) -> Callable[[], Callable]:
    def build():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoImageProcessor

        folder = tempfile.mkdtemp(prefix="hf-processor-")
        with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
            json.dump({"do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, **config}, f)
        options = {} if backend == "default" else {"backend": backend}
        processor = AutoImageProcessor.from_pretrained(folder, local_files_only=True, **options)
        return lambda image: processor(images=image, return_tensors="np")["pixel_values"][0]
    return build


def _hf_config(kind: str, size: dict, resample: int, mean: RGB, std: RGB, crop: dict | None = None) -> dict:
    config = {"image_processor_type": kind, "do_resize": True, "size": size, "resample": resample,
              "image_mean": list(mean), "image_std": list(std), "do_center_crop": crop is not None}
    return {**config, "crop_size": crop} if crop else config


# The preprocessor_config.json fields of google/vit-base-patch16-224, openai/clip-vit-base-patch32,
# google/siglip-so400m-patch14-384 and facebook/dinov2-base (resample: PIL's 2 bilinear, 3 bicubic). A processor
# that crops starts its crop at (h - crop) // 2 with either backend of transformers 5 (the default, torchvision's,
# and PIL's): crop_offset floor (with torchvision's rounding, 13 levels mean off wherever the margin is x.5).
HF_CONFIGS = {
    "vit": (_hf_config("ViTImageProcessor", {"height": 224, "width": 224}, 2, HALF, HALF),
            Recipe(resize=224, crop=224, crop_mode="squash", mean=HALF, std=HALF)),
    "clip": (_hf_config("CLIPImageProcessor", {"shortest_edge": 224}, 3, CLIP_MEAN, CLIP_STD, {"height": 224, "width": 224}),
             Recipe(resize=224, crop=224, interpolation="bicubic", mean=CLIP_MEAN, std=CLIP_STD, crop_offset="floor")),
    "siglip": (_hf_config("SiglipImageProcessor", {"height": 384, "width": 384}, 3, HALF, HALF),
               Recipe(resize=384, crop=384, crop_mode="squash", interpolation="bicubic", mean=HALF, std=HALF)),
    "dinov2": (_hf_config("BitImageProcessor", {"shortest_edge": 256}, 3, IMAGENET_MEAN, IMAGENET_STD,
                          {"height": 224, "width": 224}),
               Recipe(resize=256, crop=224, interpolation="bicubic", crop_offset="floor")),
}


def references() -> list[Reference]:
    """Every reference this project measures its recipes against (docs/model.md's table)."""
    found = [
        Reference("torchvision resnet50 (IMAGENET1K_V2)", Recipe(), _torchvision("resnet50")),
        Reference("torchvision efficientnet_b0", Recipe(resize=256, crop=224, interpolation="bicubic"),
                  _torchvision("efficientnet_b0")),
        Reference("timm efficientnet_b0 (crop_pct 0.875)", Recipe(resize=256, crop=224, interpolation="bicubic"),
                  _timm("efficientnet_b0")),
        Reference("timm convnext_tiny (crop_pct 0.95)", Recipe(resize=235, crop=224, interpolation="bicubic"),
                  _timm("convnext_tiny")),
        Reference("timm vit_tiny_patch16_224 (crop_pct 0.9, as vit_base)", Recipe(resize=248, crop=224, interpolation="bicubic",
                                                                                 mean=HALF, std=HALF),
                  _timm("vit_tiny_patch16_224")),
    ]
    for name, (config, recipe) in HF_CONFIGS.items():
        found.append(Reference(f"hf {name} (default: torchvision backend)", recipe, _hugging_face(config, "default")))
        found.append(Reference(f"hf {name} (pil backend)", recipe, _hugging_face(config, "pil")))
    return found
