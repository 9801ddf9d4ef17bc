"""The fast path's JPEG decode: the same error rows as the exact (Pillow) path for every bad image, pixels within tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess import Recipe, decode_image, preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS
from preprocess.fast_jpeg import decode_whole_jpeg, dct_reduction
from preprocess.resample import PIXEL_TOLERANCE
from tests.common.images import bad_images, encoded, odd_images, photo
from tests.unit.test_transform import torchvision_uint8

RECIPE = Recipe()
JPEG = encoded(photo(500, 375, seed=3), quality=90)


def damaged_jpegs() -> dict[str, bytes]:
    """A whole JPEG cut or overwritten at places a real failure leaves it: each must keep today's row."""
    cells = {f"cut-at-{cut}": JPEG[:cut] for cut in (2, 4, 20, 200, len(JPEG) // 2, len(JPEG) - 2)}
    for at in (20, 200, len(JPEG) // 2):  # headers, tables, entropy-coded data; EOI kept
        damaged = bytearray(JPEG)
        damaged[at : at + 64] = bytes(range(64))
        cells[f"overwritten-at-{at}"] = bytes(damaged)
    cells["eoi-early"] = JPEG[: len(JPEG) // 2] + b"\xff\xd9"
    return cells


def every_cell() -> dict[str, bytes]:
    return {**odd_images(), **bad_images(), **damaged_jpegs()}


@pytest.mark.parametrize("name", sorted(every_cell()))
def test_every_image_gets_the_pillow_paths_error_row_word_for_word(name):
    cell = every_cell()[name]
    fast = preprocess_batch([cell], RECIPE)
    pillow = preprocess_batch([cell], RECIPE, cpu_resize="exact")
    assert fast.errors == pillow.errors
    if fast.errors[0] is not None:
        assert not fast.pixels.any()
    elif name in odd_images():  # a damaged JPEG Pillow still decodes is noise, not a photo: its rows, not its pixels
        diff = np.abs(fast.pixels.astype(int) - pillow.pixels.astype(int))
        assert diff.mean() < PIXEL_TOLERANCE["mean"] and np.percentile(diff, 99) <= PIXEL_TOLERANCE["p99"]


@pytest.mark.parametrize("name", ["rgb-jpeg", "grayscale-jpeg", "very-tall-jpeg"])
def test_a_whole_jpeg_decodes_to_exactly_pillows_pixels(name):
    cell = odd_images()[name]
    fast = decode_whole_jpeg(cell, min_size=RECIPE.resize, max_pixels=DEFAULT_MAX_PIXELS)
    assert fast is not None
    assert np.array_equal(fast, np.asarray(decode_image(cell, min_size=RECIPE.resize)))


def test_a_progressive_jpeg_takes_the_fast_path():
    cell = encoded(photo(320, 240), progressive=True)
    fast = decode_whole_jpeg(cell, min_size=RECIPE.resize, max_pixels=DEFAULT_MAX_PIXELS)
    assert fast is not None and np.array_equal(fast, np.asarray(decode_image(cell)))


@pytest.mark.parametrize("name", ["cmyk-jpeg", "grayscale-png", "webp", "truncated-jpeg", "corrupt-jpeg-header", "png-bomb", "empty"])
def test_what_the_fast_path_does_not_take_goes_to_pillow(name):
    cell = {**odd_images(), **bad_images()}[name]
    assert decode_whole_jpeg(cell, min_size=RECIPE.resize, max_pixels=DEFAULT_MAX_PIXELS) is None


def test_the_pixel_limit_is_the_pillow_paths():
    cell = encoded(photo(400, 300))
    assert decode_whole_jpeg(cell, min_size=232, max_pixels=400 * 300 - 1) is None
    assert "decompression bomb" in preprocess_batch([cell], max_pixels=400 * 300 - 1).errors[0]


@pytest.mark.parametrize("width, height", [(4000, 3000), (1000, 750), (463, 1000), (464, 1000), (3000, 20)])
def test_large_jpegs_take_the_dct_scale_pillows_draft_takes(width, height):
    cell = encoded(photo(width, height), quality=85)
    fast = decode_whole_jpeg(cell, min_size=RECIPE.resize, max_pixels=DEFAULT_MAX_PIXELS)
    drafted = decode_image(cell, min_size=RECIPE.resize)
    assert fast.shape == (drafted.height, drafted.width, 3)
    assert np.abs(fast.astype(int) - np.asarray(drafted, dtype=int)).mean() < 1.0  # the same libjpeg-turbo scaled decode
    assert dct_reduction(width, height, RECIPE.resize) == -(-width // drafted.width)


@pytest.mark.parametrize("recipe", [Recipe(resize=256, crop=224), Recipe(resize=160, crop=128), Recipe(resize=384, crop=384),
                                    Recipe(resize=256, crop=224, interpolation="bicubic")],
                         ids=lambda r: f"{r.resize}-{r.crop}-{r.interpolation}")
def test_the_recipes_sizes_are_honoured_within_tolerance_of_torchvision(recipe):
    from torchvision.transforms import InterpolationMode, v2

    image = photo(640, 480, seed=5)
    cell = encoded(image, quality=95)
    batch = preprocess_batch([cell], recipe)
    kernel = InterpolationMode.BICUBIC if recipe.interpolation == "bicubic" else InterpolationMode.BILINEAR
    reference = v2.Compose([v2.Resize(recipe.resize, kernel, antialias=True), v2.CenterCrop(recipe.crop)])
    expected = np.asarray(reference(decode_image(cell)), dtype=int)
    diff = np.abs(batch.pixels[0].astype(int) - expected)
    assert batch.pixels.shape == (1, recipe.crop, recipe.crop, 3) and batch.errors == [None]
    assert diff.mean() < PIXEL_TOLERANCE["mean"] and np.percentile(diff, 99) <= PIXEL_TOLERANCE["p99"]


def test_the_default_recipe_matches_resnet50s_eval_transform_within_tolerance():
    batch = preprocess_batch([JPEG], RECIPE)
    diff = np.abs(batch.pixels[0].astype(int) - torchvision_uint8(decode_image(JPEG)).astype(int))
    assert diff.mean() < PIXEL_TOLERANCE["mean"] and np.percentile(diff, 99) <= PIXEL_TOLERANCE["p99"]
