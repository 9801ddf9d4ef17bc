"""Decode image bytes into an RGB ``PIL.Image``, refusing what cannot be classified.

Use ``decode_image`` for encoded bytes and ``pixels_from_raw`` for the reference benchmark's
pre-decoded uint8 arrays. Every refusal is an ``ImageError`` whose message becomes the
output row's ``error``; nothing here raises anything else for bad data.

One pixel limit decides what is a decompression bomb: ``max_pixels`` (``--max-pixels``). Pillow
has its own, process-wide (``Image.MAX_IMAGE_PIXELS``: it warns above it and refuses above twice
it, while opening and while loading some formats' frames); it is raised to ``max_pixels`` where
lower, so Pillow never refuses an image the job's limit allows, and its refusal of a larger one
is reworded to quote the job's limit.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, UnidentifiedImageError

# Pillow's default bomb threshold (about 89.5 MP): 12 MP photos and most panoramas pass; a tiny
# file that claims billions of pixels is refused from its header, before any pixel is decoded.
DEFAULT_MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3
# Pillow's own refusal names the pixels an image claims in these words (Pillow 5 to 13 at least).
_PILLOW_BOMB_SIZE = re.compile(r"Image size \((\d+) pixels\)")

# Modes Pillow's convert("RGB") maps faithfully: grayscale, palette, alpha (dropped, as
# torchvision's loader does), CMYK, YCbCr, 1-bit.
_CONVERTIBLE_MODES = {"RGB", "RGBA", "RGBX", "L", "LA", "P", "PA", "CMYK", "YCbCr", "1", "La", "RGBa"}
# High bit-depth modes: Pillow's convert("RGB") clips these instead of scaling, so scale here.
_WIDE_MODE_SCALE = {"I;16": 1 / 257, "I;16L": 1 / 257, "I;16B": 1 / 257, "I;16N": 1 / 257, "I": 1 / 257, "F": 1.0}


class ImageError(ValueError):
    """An image that cannot be classified; the message says why and becomes ``error``."""


def decode_image(data: bytes, *, min_size: int = 0, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode encoded image bytes to an RGB image.

    ``min_size``: the smallest short side the caller needs; JPEGs much larger than it are
    decoded at reduced size by libjpeg's DCT scaling (``Image.draft``), which is several
    times faster than a full decode followed by a downscale.
    """
    if not data:
        raise ImageError("empty image: the image cell has no bytes")
    image = _open(data, max_pixels)
    _check_pixel_count(image, max_pixels)
    if min_size and image.format == "JPEG":
        _draft_to(image, min_size)
    try:
        image.load()
    except (OSError, SyntaxError, ValueError) as e:  # Pillow's truncated/corrupt stream errors
        raise ImageError(f"undecodable {image.format or 'image'}: {e}") from e
    return _to_rgb(image)


@dataclass(frozen=True)
class ImageHeader:
    format: str  # Pillow's format name: JPEG, PNG, WEBP, ...
    mode: str  # Pillow's mode before conversion: RGB, L, CMYK, I;16, ...
    size: tuple[int, int]  # (width, height)


def inspect_image(data: bytes, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> ImageHeader:
    """Read only the header: format, mode and size, refusing bombs; no pixel is decoded."""
    if not data:
        raise ImageError("empty image: the image cell has no bytes")
    image = _open(data, max_pixels)
    _check_pixel_count(image, max_pixels)
    return ImageHeader(image.format or "", image.mode, image.size)


def pixels_from_raw(pixels: np.ndarray | bytes, shape: tuple[int, int, int]) -> Image.Image:
    """Wrap raw uint8 HWC pixels (the reference benchmark's format) as an RGB image."""
    return Image.fromarray(raw_array(pixels, shape), "RGB")


def raw_array(pixels: np.ndarray | bytes, shape: tuple[int, int, int]) -> np.ndarray:
    """Raw uint8 HWC pixels as an (H, W, 3) RGB array (grayscale repeated), refusing a wrong count or channel count."""
    array = np.frombuffer(pixels, dtype=np.uint8) if isinstance(pixels, (bytes, bytearray, memoryview)) else pixels
    expected = int(np.prod(shape))
    if array.size != expected:
        raise ImageError(f"raw pixels: got {array.size} values, expected {expected} for shape {shape}")
    array = np.ascontiguousarray(array, dtype=np.uint8).reshape(shape)
    if shape[2] == 1:
        return np.repeat(array, 3, axis=2)
    if shape[2] != 3:
        raise ImageError(f"raw pixels: {shape[2]} channels, expected 1 or 3")
    return array


def _open(data: bytes, max_pixels: int) -> Image.Image:
    _keep_pillows_limit_at_least(max_pixels)
    try:
        with warnings.catch_warnings():
            # Our own pixel limit below decides; Pillow's warning would only add noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as e:  # over twice Pillow's limit, so over ours too
        size = _PILLOW_BOMB_SIZE.search(str(e))
        claim = f"{int(size[1]):,} pixels" if size else "more than twice as many pixels"
        raise ImageError(_bomb_text(f"the image claims {claim}", max_pixels)) from e
    except UnidentifiedImageError as e:
        raise ImageError(f"undecodable image: not a recognised image format ({len(data)} bytes)") from e
    except (OSError, SyntaxError, ValueError) as e:
        raise ImageError(f"undecodable image: {e}") from e


def _check_pixel_count(image: Image.Image, max_pixels: int) -> None:
    width, height = image.size
    if width < 1 or height < 1:
        raise ImageError(f"undecodable {image.format}: invalid size {width}x{height}")
    if width * height > max_pixels:
        raise ImageError(_bomb_text(f"{image.format} claims {width}x{height} = {width * height:,} pixels", max_pixels))


def _bomb_text(claim: str, max_pixels: int) -> str:
    return f"decompression bomb refused: {claim}, over the limit of {max_pixels:,} (--max-pixels)"


def _keep_pillows_limit_at_least(max_pixels: int) -> None:
    """Raise Pillow's process-wide bomb limit to ``max_pixels`` where lower (None: someone turned it off)."""
    if Image.MAX_IMAGE_PIXELS is not None and Image.MAX_IMAGE_PIXELS < max_pixels:
        Image.MAX_IMAGE_PIXELS = max_pixels


def _draft_to(image: Image.Image, min_size: int) -> None:
    """Ask libjpeg for the smallest DCT scale (1/2, 1/4, 1/8) whose short side is >= min_size."""
    width, height = image.size
    scale = min_size / min(width, height)
    if scale < 0.5:
        image.draft("RGB", (int(np.ceil(width * scale)), int(np.ceil(height * scale))))


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if image.mode in _CONVERTIBLE_MODES:
        return image.convert("RGB")
    if image.mode in _WIDE_MODE_SCALE:
        gray = np.asarray(image, dtype=np.float32) * _WIDE_MODE_SCALE[image.mode]
        return Image.fromarray(np.clip(gray + 0.5, 0, 255).astype(np.uint8), "L").convert("RGB")
    raise ImageError(f"unsupported image mode {image.mode!r} ({image.format})")
