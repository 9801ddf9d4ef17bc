"""The CPU-side screen: only whole JPEGs the device decodes like Pillow go to the device; no torch."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from preprocess import DEFAULT_MAX_PIXELS, preprocess_batch
from preprocess.screen import screen
from tests.common.images import bad_images, encoded, odd_images, photo

DEVICE_OK = {"rgb-jpeg", "grayscale-jpeg", "very-tall-jpeg", "large-jpeg"}


@pytest.mark.parametrize("name", sorted(odd_images()))
def test_only_baseline_rgb_and_gray_jpegs_go_to_the_device(name):
    assert screen(odd_images()[name], DEFAULT_MAX_PIXELS).device == (name in DEVICE_OK)


def test_progressive_jpeg_goes_to_the_device():
    result = screen(encoded(photo(640, 480), progressive=True), DEFAULT_MAX_PIXELS)
    assert result.device and result.size == (640, 480)


@pytest.mark.parametrize("name", sorted(bad_images()))
def test_every_bad_image_goes_to_the_cpu_path(name):
    assert not screen(bad_images()[name], DEFAULT_MAX_PIXELS).device


@pytest.mark.parametrize("cut", [2, 100, 600, 0.5, 0.99, -1])
def test_a_jpeg_cut_anywhere_stays_on_the_cpu_and_pillow_words_the_error(cut):
    """nvJPEG decodes truncated JPEGs without complaint; the screen must catch every cut."""
    whole = encoded(photo(400, 300, seed=2))
    end = int(len(whole) * cut) if isinstance(cut, float) else cut
    truncated = whole[:end]
    assert not screen(truncated, DEFAULT_MAX_PIXELS).device
    assert preprocess_batch([truncated]).errors[0] is not None  # the CPU path refuses it too


def test_damaged_segment_lengths_and_unknown_frames_stay_on_the_cpu():
    whole = encoded(photo(64, 48))
    sof = whole.index(b"\xff\xc0")
    arithmetic = whole[:sof] + b"\xff\xc9" + whole[sof + 2 :]  # SOF9: arithmetic coding
    twelve_bit = whole[: sof + 4] + b"\x0c" + whole[sof + 5 :]  # 12-bit samples
    long_segment = whole[:4] + b"\xff\xff" + whole[6:]  # APP0 length past the end
    for cell in (arithmetic, twelve_bit, long_segment, whole + b"trailing"):
        assert not screen(cell, DEFAULT_MAX_PIXELS).device


def test_pixel_limit_is_the_cpu_paths():
    cell = encoded(photo(400, 300))
    assert screen(cell, 400 * 300).device and not screen(cell, 400 * 300 - 1).device


def test_screening_costs_microseconds_not_a_decode():
    cells = [encoded(photo(640, 480, seed=s)) for s in range(20)]
    started = time.perf_counter()
    for _ in range(10):
        for cell in cells:
            screen(cell, DEFAULT_MAX_PIXELS)
    per_image = (time.perf_counter() - started) / 200
    assert per_image < 200e-6  # measured ~5 us here; a 640x480 Pillow decode takes ~3 ms


def test_the_cpu_stage_imports_no_torch():
    code = (
        "import sys, preprocess, preprocess.screen, preprocess.routing, preprocess.split_decode; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
