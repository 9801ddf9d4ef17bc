"""Each recipe against the model's own transform (torchvision, timm, Hugging Face): the exact path to Pillow's
rounding, the fast path within its stated tolerance (docs/model.md has the figures on more images)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from benchmarks.references import pixels, references
from job.sample.synthetic import encode, textured_image
from preprocess import preprocess_batch
from preprocess.resample import PIXEL_TOLERANCE

REFERENCES = {reference.name: reference for reference in references()}
# 508x375 and 427x640: centre crops that start on half pixels for the 224 and 256 recipes (round and floor differ).
JPEGS = [encode(textured_image(np.random.default_rng(seed), *size), "jpeg") for seed, size in enumerate([(508, 375), (427, 640)])]
# The exact path resizes the kept box in one Pillow call, a reference the whole image and then crops: Pillow may
# take its two passes in another order then, and round (and clip a bicubic's overshoot) in between otherwise: on the
# portrait 0.24 levels mean, up to 4 at a few edges; the landscape is the same to the level.
EXACT_MEAN, EXACT_P99 = 0.3, 1.001  # levels; the references give floats (normalised and back), 1e-5 off whole levels


@pytest.fixture(scope="module")
def theirs() -> dict[str, np.ndarray | ImportError]:
    """Each reference's pixels, or the ImportError of a model library (timm, transformers) not installed here."""
    found = {}
    for name, reference in REFERENCES.items():
        try:
            transform = reference.build()
        except ImportError as e:
            found[name] = e
            continue
        found[name] = np.stack([pixels(reference, transform, Image.open(io.BytesIO(j)).convert("RGB")) for j in JPEGS])
    return found


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_exact_path_is_the_models_own_transform_and_the_fast_path_within_tolerance(theirs, name):
    if isinstance(theirs[name], ImportError):
        pytest.skip(f"{name}: {theirs[name]}; pip install -e '.[timm,hf]'")
    recipe = REFERENCES[name].recipe
    exact = np.abs(preprocess_batch(JPEGS, recipe, cpu_resize="exact").pixels - theirs[name])
    assert exact.mean() <= EXACT_MEAN and np.percentile(exact, 99) <= EXACT_P99, (exact.mean(), np.percentile(exact, 99))
    fast = np.abs(preprocess_batch(JPEGS, recipe).pixels - theirs[name])
    assert fast.mean() <= PIXEL_TOLERANCE["mean"] and np.percentile(fast, 99) <= PIXEL_TOLERANCE["p99"], fast.mean()


def test_hugging_faces_croppers_start_the_crop_at_the_floor():
    clip = REFERENCES["hf clip (default: torchvision backend)"]
    assert clip.recipe.crop_offset == "floor"
    assert REFERENCES["torchvision resnet50 (IMAGENET1K_V2)"].recipe.crop_offset == "round"
