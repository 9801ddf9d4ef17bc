"""The timing helpers: model-only throughput and preprocessing per core, on real data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inference import load_model
from inference.benchmark import model_only_images_per_sec
from inference.model import RECIPE
from preprocess.recipe import IMAGENET_RECIPE
from preprocess.benchmark import ours, per_core_rate, torchvision_resize_crop, torchvision_transform
from tests.common.images import encoded, photo


def test_model_only_times_the_batches_it_reports():
    result = model_only_images_per_sec(load_model("random"), torch.device("cpu"), "fp32", 2, seconds=0, min_batches=2)
    assert result.batches == 2 and result.batch_size == 2 and result.precision == "fp32" and result.device == "cpu"
    assert result.images_per_sec == pytest.approx(4 / result.seconds, rel=0.01)


def test_model_only_refuses_an_empty_batch():
    with pytest.raises(ValueError, match="batch_size >= 1"):
        model_only_images_per_sec(load_model("random"), torch.device("cpu"), "fp32", 0)


def test_timed_methods_produce_the_same_crop_and_restore_threads():
    images = [encoded(photo(500, 375, seed=s), quality=95) for s in range(3)]
    size = IMAGENET_RECIPE
    reference = torchvision_resize_crop(size)(images).astype(int)
    assert reference.shape == (3, size.crop, size.crop, 3)
    assert np.abs(ours(size)(images).pixels.astype(int) - reference).max() <= 2  # resampling rounding only
    assert torchvision_transform(RECIPE.transforms())(images).shape == (3, 3, size.crop, size.crop)
    threads = torch.get_num_threads()
    assert per_core_rate(ours(size), images, repeats=1) > 0
    assert torch.get_num_threads() == threads
