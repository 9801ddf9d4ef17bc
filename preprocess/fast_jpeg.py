"""Decode whole JPEGs with libjpeg-turbo directly: the CPU stage's fast path.

Use ``decode_whole_jpeg`` before Pillow. It takes only what ``preprocess.screen`` finds to be a
structurally whole JPEG (8-bit, grayscale or YCbCr, within the pixel limit, EOI at the end) and
asks libjpeg-turbo, through simplejpeg, to decode it strictly: any warning at all (corrupt data,
a premature end) is a refusal. Whatever it does not take or refuses, it returns as ``None`` and
the caller runs the Pillow path (``preprocess.decode``), which decodes it or words its error row
exactly as it always has. So every error row comes from one place, whatever the fast path does.

Both paths run the same libjpeg-turbo with the same settings (accurate integer DCT, smooth chroma
upsampling), so a full-size decode gives the same pixels as Pillow's; it skips Pillow's Python
header parsing and its copy into a 4-byte-per-pixel image. JPEGs at least twice the recipe's size are
decoded at the DCT scale Pillow's ``draft`` would pick (1/2, 1/4 or 1/8), so large photos take the
same shortcut on both paths.
"""

from __future__ import annotations

import math

import numpy as np
import simplejpeg

from preprocess.screen import screen


def decode_whole_jpeg(data: bytes, *, min_size: int, max_pixels: int) -> np.ndarray | None:
    """(H, W, 3) uint8 RGB pixels of a whole JPEG, or None: not one for this path (Pillow decides).

    ``min_size``: the smallest short side the caller needs (the recipe's resize).
    """
    screening = screen(data, max_pixels)
    if not screening.device:
        return None
    width, height = screening.size
    reduction = dct_reduction(width, height, min_size)
    try:
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True,
                                      min_width=math.ceil(width / reduction), min_height=math.ceil(height / reduction))
    except ValueError:  # simplejpeg's one error: libjpeg-turbo refused or warned; Pillow words the row
        return None


def dct_reduction(width: int, height: int, min_size: int) -> int:
    """1, 2, 4 or 8: the DCT scale-down Pillow's ``Image.draft`` picks for a short side >= ``min_size``.

    Only powers of two: libjpeg-turbo's 3/8, 5/8, ... scales have no SIMD code and decode no faster
    than a full-size decode.
    """
    scale = min_size / min(width, height)
    if scale >= 0.5:
        return 1
    # As Pillow's JpegImageFile.draft: the requested size, then the largest power of two it divides by.
    fits = min(width // math.ceil(width * scale), height // math.ceil(height * scale))
    return next(reduction for reduction in (8, 4, 2, 1) if fits >= reduction)
