"""Real images of every kind the job must handle, made with Pillow in memory."""

from __future__ import annotations

import functools
import io
import struct
import zlib

import numpy as np
from PIL import Image

from job.sample.synthetic import synthetic_image


def photo(width: int = 320, height: int = 240, seed: int = 0) -> Image.Image:
    return synthetic_image(np.random.default_rng(seed), width, height)


def encoded(image: Image.Image, fmt: str = "JPEG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def png_bomb(width: int = 100_000, height: int = 100_000) -> bytes:
    """A tiny valid-header PNG claiming width x height pixels (10 G by default)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


@functools.cache
def odd_images() -> dict[str, bytes]:
    """Valid images in every mode and format the job must classify."""
    base = photo(300, 200)
    sixteen = Image.fromarray(np.asarray(base.convert("L"), dtype=np.uint16) * 257)  # mode I;16
    return {
        "rgb-jpeg": encoded(base),
        "cmyk-jpeg": encoded(base.convert("CMYK")),
        "grayscale-jpeg": encoded(base.convert("L")),
        "grayscale-png": encoded(base.convert("L"), "PNG"),
        "palette-png": encoded(base.convert("P", palette=Image.Palette.ADAPTIVE), "PNG"),
        "rgba-png": encoded(base.convert("RGBA"), "PNG"),
        "la-png": encoded(base.convert("LA"), "PNG"),
        "16bit-png": encoded(sixteen, "PNG"),
        "1bit-png": encoded(base.convert("1"), "PNG"),
        "webp": encoded(base, "WEBP", quality=80),
        "bmp": encoded(base, "BMP"),
        "gif": encoded(base.convert("P"), "GIF"),
        "1x1-png": encoded(Image.new("RGB", (1, 1), (200, 10, 10)), "PNG"),
        "very-wide-png": encoded(Image.new("RGB", (20_000, 3), (10, 200, 10)), "PNG"),
        "very-tall-jpeg": encoded(photo(8, 3000)),
        "large-jpeg": encoded(photo(4000, 3000)),
    }


@functools.cache
def bad_images() -> dict[str, bytes]:
    """Bytes that must become error rows, with a word the error must contain."""
    jpeg = encoded(photo())
    return {
        "empty": b"",
        "not-an-image": b"hello, I am text",
        "truncated-jpeg": jpeg[: len(jpeg) // 2],
        "corrupt-jpeg-header": jpeg[:20] + b"\x00" * 200,
        "png-bomb": png_bomb(),
    }
