"""Our one-pass resize+crop matches torchvision's ResNet50 eval transform: Pillow's exactly, OpenCV's within its tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.models import ResNet50_Weights
from torchvision.transforms import InterpolationMode, v2

from preprocess.recipe import IMAGENET_RECIPE
from preprocess import Recipe, resize_center_crop
from preprocess.transform import PIXEL_TOLERANCE, resize_center_crop_pixels
from tests.common.images import photo


def torchvision_uint8(image: Image.Image) -> np.ndarray:
    """torchvision's own eval transform, un-normalised back to uint8 HWC."""
    transform = ResNet50_Weights.DEFAULT.transforms()
    tensor = transform(image)  # (3, 224, 224) float, normalised
    mean = torch.tensor(transform.mean).view(3, 1, 1)
    std = torch.tensor(transform.std).view(3, 1, 1)
    return ((tensor * std + mean) * 255).round().clamp(0, 255).byte().permute(1, 2, 0).numpy()


def test_recipe_comes_from_torchvision_weights():
    assert IMAGENET_RECIPE == Recipe(resize=232, crop=224)


@pytest.mark.parametrize("width, height", [(500, 375), (375, 500), (640, 480), (232, 232), (300, 1000), (1, 1), (4000, 30)])
def test_matches_torchvision_eval_transform(width, height):
    image = photo(width, height, seed=width + height)
    ours = resize_center_crop(image, IMAGENET_RECIPE).astype(int)
    reference = torchvision_uint8(image).astype(int)
    assert ours.shape == reference.shape == (224, 224, 3)
    diff = np.abs(ours - reference)
    assert diff.mean() < 1.0, f"mean abs diff {diff.mean():.3f}"
    assert np.percentile(diff, 99) <= 3


@pytest.mark.parametrize("width, height", [(500, 375), (375, 500), (640, 480), (232, 232), (300, 1000), (1, 1), (4000, 30),
                                           (460, 350), (1000, 750), (260, 300), (700, 600)])
def test_the_fast_resampler_stays_within_its_stated_tolerance_of_torchvision(width, height):
    image = photo(width, height, seed=width + height)
    fast = resize_center_crop_pixels(np.asarray(image), IMAGENET_RECIPE).astype(int)
    diff = np.abs(fast - torchvision_uint8(image).astype(int))
    assert fast.shape == (224, 224, 3)
    assert diff.mean() < PIXEL_TOLERANCE["mean"], f"mean abs diff {diff.mean():.3f}"
    assert np.percentile(diff, 99) <= PIXEL_TOLERANCE["p99"]


@pytest.mark.parametrize("recipe", [Recipe(resize=256, crop=224), Recipe(resize=160, crop=128), Recipe(resize=384, crop=384)],
                         ids=lambda r: f"{r.resize}-{r.crop}")
def test_the_fast_resampler_honours_the_recipes_sizes(recipe):
    image = photo(500, 375, seed=1)
    reference = v2.Compose([v2.Resize(recipe.resize, InterpolationMode.BILINEAR, antialias=True), v2.CenterCrop(recipe.crop)])
    fast = resize_center_crop_pixels(np.asarray(image), recipe).astype(int)
    diff = np.abs(fast - np.asarray(reference(image), dtype=int))
    assert fast.shape == (recipe.crop, recipe.crop, 3)
    assert diff.mean() < PIXEL_TOLERANCE["mean"] and np.percentile(diff, 99) <= PIXEL_TOLERANCE["p99"]
