"""``--decode gpu``'s device path, run on the CPU device: same errors as the CPU path, near-equal pixels.

The code is the same on CUDA (nvJPEG instead of libjpeg-turbo); tests/gpu runs it there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from preprocess import EvalSize, inspect_image, preprocess_batch
from preprocess.decode import ImageError
from preprocess.gpu_decode import preprocess_on_device
from tests.common.datasets import mixed_rows
from tests.common.images import encoded, photo, png_bomb

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def cells():
    return [data for _, data in mixed_rows()] + [None]


def test_errors_are_word_for_word_those_of_the_cpu_path(cells):
    device = preprocess_on_device(cells, CPU)
    cpu = preprocess_batch(cells)
    assert device.errors == cpu.errors
    assert sum(e is not None for e in device.errors) >= 6  # the bad images and the null cell


def test_pixels_match_the_cpu_path_within_resampling_rounding(cells):
    device = preprocess_on_device(cells, CPU)
    cpu = preprocess_batch(cells)
    ok = cpu.ok
    assert device.pixels.dtype == torch.uint8 and tuple(device.pixels.shape) == cpu.pixels.shape
    diff = np.abs(device.pixels.numpy().astype(int) - cpu.pixels.astype(int))[ok]
    assert diff.max() <= 3 and diff.mean() < 0.1
    assert not device.pixels.numpy()[~ok].any()  # failed rows stay zero


def test_non_jpeg_takes_the_cpu_path_exactly():
    cells = [encoded(photo(300, 200, seed=3), "PNG"), encoded(photo(300, 200, seed=4), "WEBP")]
    assert np.array_equal(preprocess_on_device(cells, CPU).pixels.numpy(), preprocess_batch(cells).pixels)


def test_one_corrupt_jpeg_costs_only_its_row():
    good = encoded(photo(400, 300, seed=5))
    corrupt = good[:200] + bytes(len(good) - 200)  # header intact, entropy data zeroed
    out = preprocess_on_device([good, corrupt, good], CPU, EvalSize())
    assert out.errors[0] is None and out.errors[2] is None
    assert torch.equal(out.pixels[0], out.pixels[2]) and out.pixels[0].any()


def test_inspect_image_reads_the_header_and_refuses_bombs():
    header = inspect_image(encoded(photo(64, 48)))
    assert (header.format, header.mode, header.size) == ("JPEG", "RGB", (64, 48))
    with pytest.raises(ImageError, match="decompression bomb"):
        inspect_image(png_bomb())
