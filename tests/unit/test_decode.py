"""Decoding: every odd mode and format classifies; every bad input is an ImageError saying why."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from preprocess import Recipe, ImageError, decode_image, pixels_from_raw, preprocess_batch, resize_center_crop
from preprocess.decode import DEFAULT_MAX_PIXELS, inspect_image
from tests.common.images import bad_images, encoded, odd_images, photo, png_bomb

SIZE = Recipe()


@pytest.mark.parametrize("name", sorted(odd_images()))
def test_odd_images_decode_to_rgb_crops(name):
    image = decode_image(odd_images()[name], min_size=SIZE.resize)
    assert image.mode == "RGB"
    pixels = resize_center_crop(image, SIZE)
    assert pixels.shape == (224, 224, 3) and pixels.dtype == np.uint8


@pytest.mark.parametrize(
    "name, reason",
    [
        ("empty", "empty image"),
        ("not-an-image", "not a recognised image format"),
        ("truncated-jpeg", "truncated"),
        ("corrupt-jpeg-header", "undecodable"),
        ("png-bomb", "decompression bomb"),
    ],
)
def test_bad_images_raise_image_error_naming_the_reason(name, reason):
    with pytest.raises(ImageError, match=reason):
        decode_image(bad_images()[name])


def test_bomb_is_refused_from_the_header_under_a_custom_limit():
    big = encoded(photo(400, 300), "PNG")
    with pytest.raises(ImageError, match="120,000 pixels, over the limit of 100,000"):
        decode_image(big, max_pixels=100_000)


@pytest.mark.parametrize("width, height", [(10_000, 10_000), (100_000, 100_000)], ids=["over-ours", "over-twice-pillows"])
def test_every_bomb_refusal_quotes_the_one_limit(width, height):
    """Pillow refuses images over twice its own limit before ours is checked: its refusal quotes ours too."""
    with pytest.raises(ImageError) as refused:
        decode_image(png_bomb(width, height))
    assert f"claims {width}x{height} = " in str(refused.value) or f"claims {width * height:,} pixels" in str(refused.value)
    assert str(refused.value).endswith(f"pixels, over the limit of {DEFAULT_MAX_PIXELS:,} (--max-pixels)")


def test_a_limit_above_pillows_own_is_the_one_that_decides(monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)  # restored after: the decoder raises it
    allowed = 3 * DEFAULT_MAX_PIXELS  # 268 MP, over twice Pillow's default limit
    assert inspect_image(png_bomb(20_000, 12_000), max_pixels=allowed).size == (20_000, 12_000)
    with pytest.raises(ImageError, match=rf"PNG claims 20000x15000 = 300,000,000 pixels, over the limit of {allowed:,}"):
        decode_image(png_bomb(20_000, 15_000), max_pixels=allowed)


def test_sixteen_bit_png_is_scaled_not_clipped():
    gray = np.tile(np.arange(0, 65536, 256, dtype=np.uint16), (16, 1))  # 0..65280
    image = decode_image(encoded(Image.fromarray(gray), "PNG"))
    values = np.asarray(image)[0, :, 0].astype(int)
    # Scaled: 16-bit v maps to about v/257. Clipping would give 255 from v=256 on.
    assert np.abs(values - np.arange(0, 65536, 256) / 257).max() <= 1


def test_cmyk_and_rgb_of_the_same_photo_agree():
    base = photo(300, 200)
    rgb = decode_image(encoded(base, quality=95)).reduce(10)
    cmyk = decode_image(encoded(base.convert("CMYK"), quality=95)).reduce(10)
    # Pixel noise differs between the two JPEG encodings; the colours must not.
    assert np.abs(np.asarray(rgb, dtype=int) - np.asarray(cmyk, dtype=int)).mean() < 4


def test_large_jpeg_is_decoded_at_reduced_size_close_to_a_full_decode():
    data = encoded(photo(4000, 3000), quality=90)
    drafted = decode_image(data, min_size=SIZE.resize)
    assert drafted.size == (500, 375)  # 1/8 DCT scale: the smallest with short side >= 232
    full = decode_image(data)
    diff = resize_center_crop(drafted, SIZE).astype(int) - resize_center_crop(full, SIZE).astype(int)
    assert np.abs(diff).mean() < 2.0


def test_raw_pixels_round_trip_and_wrong_sizes_are_errors():
    pixels = np.asarray(photo(256, 256))
    image = pixels_from_raw(pixels.tobytes(), (256, 256, 3))
    assert np.array_equal(np.asarray(image), pixels)
    with pytest.raises(ImageError, match="expected 196608"):
        pixels_from_raw(pixels.tobytes()[:-3], (256, 256, 3))


def test_batch_keeps_every_row_and_marks_only_the_bad_ones():
    good, bad = odd_images(), bad_images()
    cells = [*good.values(), *bad.values(), None]
    batch = preprocess_batch(cells, SIZE)
    assert batch.pixels.shape == (len(cells), 224, 224, 3)
    assert batch.errors[: len(good)] == [None] * len(good)
    assert all(batch.errors[len(good) :])
    assert "null" in batch.errors[-1]
    assert not batch.pixels[~batch.ok].any()


def test_inspect_image_reads_the_header_and_refuses_bombs():
    from preprocess import inspect_image
    from tests.common.images import encoded, photo, png_bomb

    header = inspect_image(encoded(photo(64, 48)))
    assert (header.format, header.mode, header.size) == ("JPEG", "RGB", (64, 48))
    with pytest.raises(ImageError, match="decompression bomb"):
        inspect_image(png_bomb())
