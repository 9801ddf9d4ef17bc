"""The timing helpers: model-only throughput and preprocessing per core, on real data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inference import load_model
from inference.benchmark import model_only_images_per_sec
from inference.model import RECIPE
from preprocess.recipe import IMAGENET_RECIPE
from preprocess.benchmark import (methods, ours, ours_exact, paired_per_core, paired_ratio, per_core_rate, per_core_rows,
                                  torchvision_resize_crop, torchvision_transform)
from preprocess.resample import PIXEL_TOLERANCE
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
    assert np.abs(ours_exact(size)(images).pixels.astype(int) - reference).max() <= 2  # resampling rounding only
    fast = np.abs(ours(size)(images).pixels.astype(int) - reference)
    assert fast.mean() < PIXEL_TOLERANCE["mean"] and np.percentile(fast, 99) <= PIXEL_TOLERANCE["p99"]
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


def test_paired_timing_runs_every_method_each_repeat_and_restores_threads():
    images = [encoded(photo(320, 240, seed=s)) for s in range(2)]
    calls = {"a": 0, "b": 0}

    def counted(name):
        def method(batch):
            calls[name] += 1
            return ours(IMAGENET_RECIPE)(batch)
        return method

    threads = torch.get_num_threads()
    rates = paired_per_core({"a": counted("a"), "b": counted("b")}, images, repeats=3)
    assert torch.get_num_threads() == threads
    assert calls == {"a": 4, "b": 4}  # one warm-up, then one call per repeat
    assert [len(r) for r in rates.values()] == [3, 3] and min(rates["a"] + rates["b"]) > 0
    assert paired_ratio([2.0, 4.0, 9.0], [1.0, 2.0, 3.0]) == 2.0  # the median of the pairs' ratios


def test_preprocess_bench_pairs_fast_and_exact_and_states_each_recipes_tolerance(tmp_path):
    from benchmarks.preprocess_bench import TOLERANCE_RECIPES, main

    results = tmp_path / "rows.jsonl"
    [row] = main(["--images", "2", "--repeats", "1", "--sets", "textured_500x375", "--recipes", "resnet50_bilinear_232_224",
                  "--results", str(results)])
    assert row["exact_images_per_sec"] > 0 and row["fast_images_per_sec"] > 0 and row["mean_jpeg_kb"] > 80
    assert row["speedup_fast_vs_exact"] == pytest.approx(row["speedup_fast_vs_exact_range"][0], abs=0.01)
    assert set(row["pixel_difference_fast_vs_exact"]) == set(TOLERANCE_RECIPES)
    assert all(d["mean"] <= PIXEL_TOLERANCE["mean"] for d in row["pixel_difference_fast_vs_exact"].values())
    assert row["versions"]["simplejpeg"] != "not installed" and results.read_text().count("\n") == 1
