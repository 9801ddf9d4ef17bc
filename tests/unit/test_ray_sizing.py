"""How many pool actors the cluster's memory holds (``runners.ray.sizing``): pure arithmetic, no Ray."""

from __future__ import annotations

import pytest

from job.errors import JobError
from preprocess import DEFAULT_MAX_PIXELS
from runners.ray.sizing import (DECODER_BASE, GPU_PREDICTOR_BASE, MB, PREDICTOR_BASE, PREDICTOR_PER_IMAGE, ActorMemory,
                                fit_pools)

GB = 1024 * MB
NEED = ActorMemory(decoder=1 * GB, predictor=2 * GB)


def test_the_estimates_grow_with_what_each_actor_holds():
    small = ActorMemory.estimate(batch_size=32, on_gpu=False, calls_per_predictor=1, block_rows=64, crop=224,
                                 max_pixels=1_000_000)
    assert small.decoder == DECODER_BASE + 2 * 64 * 224 * 224 * 3 + 3_000_000
    assert small.predictor == PREDICTOR_BASE + 32 * PREDICTOR_PER_IMAGE
    gpu = ActorMemory.estimate(batch_size=256, on_gpu=True, calls_per_predictor=2, block_rows=64, crop=224,
                               max_pixels=DEFAULT_MAX_PIXELS)
    assert gpu.decoder - small.decoder == (DEFAULT_MAX_PIXELS - 1_000_000) * 3  # the largest decode allowed
    # On a GPU the activations are the device's: the host holds two batches of uint8 pixels, twice each.
    assert gpu.predictor == GPU_PREDICTOR_BASE + 2 * 256 * 224 * 224 * 3 * 2


def test_pools_that_fit_are_kept_and_nothing_is_said(capsys):
    assert fit_pools(preprocess=4, classify=2, need=NEED, memory=8 * GB) == (4, 2)
    assert capsys.readouterr().err == ""


def test_decoders_shrink_first_then_predictors_with_one_line(capsys):
    assert fit_pools(preprocess=6, classify=2, need=NEED, memory=7.5 * GB) == (3, 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds 3 of 6 preprocessing actors" in err and "2 of 2 predictors" in err
    assert fit_pools(preprocess=6, classify=4, need=NEED, memory=5.5 * GB) == (1, 2)
    assert "holds 1 of 6 preprocessing actors (1.0 GB each) and 2 of 4 predictors (2.0 GB each)" in capsys.readouterr().err


def test_not_even_one_of_each_is_refused_in_one_line_naming_memory_and_the_fix():
    with pytest.raises(JobError) as refused:
        fit_pools(preprocess=2, classify=1, need=NEED, memory=2.5 * GB)
    line = str(refused.value)
    assert "\n" not in line and "memory (2.5 GB)" in line and "one preprocessing actor (1.0 GB)" in line
    assert "--batch-size" in line and "--max-pixels" in line and "more memory" in line
