"""The timing helpers: model-only throughput and preprocessing per core, on real data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inference import load_model
from inference.benchmark import model_only_images_per_sec
from inference.model import RECIPE
from preprocess.recipe import IMAGENET_RECIPE
from preprocess.benchmark import methods, ours, per_core_rate, per_core_rows, torchvision_resize_crop, torchvision_transform
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


def test_per_core_rows_time_every_method_against_ours():
    images = [encoded(photo(320, 240, seed=s), quality=90) for s in range(2)]
    rows = per_core_rows(images, methods(IMAGENET_RECIPE, RECIPE.transforms(), "the preset"), repeats=1)
    assert [r["method"] for r in rows] == ["ours", "torchvision_resize_crop", "torchvision_preset"]
    assert [r["description"] for r in rows][1:] == ["torchvision v2 Resize(232) + CenterCrop(224) on PIL, uint8",
                                                    "torchvision the preset (float, normalised)"]
    for row in rows:
        assert (row["images"], row["repeats"]) == (2, 1) and row["images_per_sec_per_core"] > 0
        assert row["ours_speedup"] == pytest.approx(rows[0]["images_per_sec_per_core"] / row["images_per_sec_per_core"], rel=0.02)


def test_per_core_rows_need_ours_to_compare_with():
    with pytest.raises(ValueError, match="'ours', got only \\['other'\\]"):
        per_core_rows([b"jpeg"], {"other": ("a method", lambda images: None)})
