"""The device path run on the CPU device: ``DeviceStage`` and the ``preprocess_on_device`` wrapper.

Same error rows as the CPU path, pixels within the batched resize's measured tolerance, row
order kept when CPU-decoded and device-decoded rows interleave. tests/gpu runs the same on CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from preprocess import Recipe, preprocess_batch
from preprocess.device_decode import DecoderUnavailable, JpegDecoder, choose_decoder
from preprocess.device_stage import DeviceStage
from tests.common.device_pixels import preprocess_on_device
from preprocess.split_decode import preprocess_routed
from preprocess.routing import AutoPolicy, DecodeRouter
from tests.common.datasets import mixed_rows
from tests.common.images import encoded, photo

CPU = torch.device("cpu")
# The device path's resize against Pillow's: measured mean 0.30-0.55 levels per image on
# device-decoded rows (tests/unit/test_device_resize.py); most rows here are CPU-decoded (0).
MEAN_BOUND, MAX_BOUND = 0.3, 16


@pytest.fixture(scope="module")
def cells():
    return [data for _, data in mixed_rows()] + [None]


def test_errors_are_word_for_word_those_of_the_cpu_path(cells):
    device = preprocess_on_device(cells, CPU)
    assert device.errors == preprocess_batch(cells).errors and device.decoder == "cpu"
    assert sum(e is not None for e in device.errors) >= 6  # the bad images and the null cell


def test_pixels_match_the_cpu_path_within_the_resize_tolerance(cells):
    device, cpu = preprocess_on_device(cells, CPU), preprocess_batch(cells, cpu_resize="exact")  # bounds: Pillow's
    assert device.pixels.dtype == torch.uint8 and tuple(device.pixels.shape) == cpu.pixels.shape
    diff = np.abs(device.pixels.numpy().astype(int) - cpu.pixels.astype(int))[cpu.ok]
    assert diff.mean() < MEAN_BOUND and diff.max() <= MAX_BOUND
    assert not device.pixels.numpy()[~cpu.ok].any()  # failed rows stay zero


def test_non_jpeg_takes_the_cpu_path_exactly():
    cells = [encoded(photo(300, 200, seed=3), "PNG"), encoded(photo(300, 200, seed=4), "WEBP")]
    assert np.array_equal(preprocess_on_device(cells, CPU).pixels.numpy(), preprocess_batch(cells).pixels)


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_stage_output_is_in_row_order_whoever_decoded_each_row(cells, share):
    routed = preprocess_routed(cells, DecodeRouter("auto", AutoPolicy(initial_cpu_share=share)))
    out = DeviceStage(CPU)(routed)
    reference = preprocess_on_device(cells, CPU)  # every JPEG on the device
    ok = [i for i, e in enumerate(out.errors) if e is None]
    assert out.errors == reference.errors and out.images.shape == (len(ok), 3, 224, 224)
    mine = out.images.round().permute(0, 2, 3, 1).numpy()
    cpu = preprocess_batch(cells, cpu_resize="exact").pixels[ok].astype(np.float64)
    assert np.abs(mine - cpu).mean() < MEAN_BOUND  # row i's image is row i's, not a neighbour's


def test_a_jpeg_the_decoder_refuses_is_decoded_by_the_cpu_path(monkeypatch):
    good = encoded(photo(400, 300, seed=5))
    stage = DeviceStage(CPU)
    routed = preprocess_routed([good, good], DecodeRouter("gpu"))
    monkeypatch.setattr(stage.decoder, "decode", lambda data: [None] * len(data))  # refuses all
    out = stage(routed)
    assert out.errors == [None, None]
    assert np.array_equal(out.images.permute(0, 2, 3, 1).numpy(), preprocess_batch([good, good]).pixels.astype(np.float32))


def test_decoder_choice_is_explicit():
    assert choose_decoder(CPU) == "cpu" and JpegDecoder(CPU).name == "cpu"
    with pytest.raises(DecoderUnavailable, match="needs a CUDA device"):
        choose_decoder(CPU, "nvimgcodec")
    with pytest.raises(ValueError, match="choose one of"):
        choose_decoder(CPU, "pillow")


def test_one_corrupt_jpeg_costs_only_its_row():
    good = encoded(photo(400, 300, seed=5))
    corrupt = good[:200] + bytes(len(good) - 200)  # header intact, entropy data zeroed
    out = preprocess_on_device([good, corrupt, good], CPU, Recipe())
    assert out.errors[0] is None and out.errors[2] is None and out.errors[1] is not None
    assert torch.equal(out.pixels[0], out.pixels[2]) and out.pixels[0].any()
