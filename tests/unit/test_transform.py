"""The exact path's one-pass resize+crop matches torchvision's ResNet50 eval transform (the fast path: test_resample)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.models import ResNet50_Weights

from preprocess.recipe import IMAGENET_RECIPE
from preprocess import Recipe, resize_center_crop
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
