"""Screen encoded cells on the CPU, without decoding a pixel: which ones may a device decode?

Use it on the CPU workers before anything is sent to a GPU (``--decode gpu`` and ``auto``).
A cell goes to the device only when it is a JPEG the device decodes exactly as Pillow would
and it is structurally whole: SOI, well-formed marker segments up to the first SOS, a frame
header we accept, and an EOI as the last two bytes. Everything else (another format, CMYK,
12-bit, arithmetic coding, a bomb, a truncated or damaged stream) goes to the CPU path, which
decodes it or words its error row. That is what keeps error rows identical whatever decodes:
nvJPEG and nvImageCodec's hardware decoder decode a truncated JPEG without complaint, Pillow says
"image file is truncated".

The walk reads a few hundred header bytes and the last two: about 2-4 us per image (see
tests/unit/test_screen.py for the measurement). No Pillow, numpy or torch here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SOI, EOI = b"\xff\xd8", b"\xff\xd9"
SOS = 0xDA
# Frame types the device decoders take: baseline, extended sequential and progressive, Huffman-coded.
DEVICE_FRAMES = {0xC0: "baseline", 0xC1: "extended", 0xC2: "progressive"}
# Every other SOFn (lossless, hierarchical, arithmetic-coded): Pillow/libjpeg only.
OTHER_FRAMES = {0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
# Markers that stand alone (no length field): TEM and RST0-7. SOI/EOI are handled explicitly.
STANDALONE = {0x01, *range(0xD0, 0xD8)}
DEVICE_COMPONENTS = {1: "L", 3: "RGB"}  # Pillow's mode for each; 4 components (CMYK/YCCK) stay on CPU


@dataclass(frozen=True, slots=True)
class Screening:
    device: bool  # True: a whole JPEG the device decodes like Pillow
    reason: str  # why not (for logs and tests); "" when ``device``
    size: tuple[int, int] | None = None  # (width, height) from the frame header, when read


def screen(cell: bytes | None, max_pixels: int) -> Screening:
    """Decide one cell's route from its header bytes and its last two bytes."""
    if not cell:
        return Screening(False, "no bytes")
    if not cell.startswith(SOI):
        return Screening(False, "not a JPEG")
    try:
        frame, components, size, rgb_coded = _walk_to_scan(cell)
    except _Refused as e:
        return Screening(False, f"header: {e}")
    return _judge(cell, frame, components, size, rgb_coded, max_pixels)


def device_rows(cells: list[bytes | None], max_pixels: int) -> list[int]:
    """Indices of the cells a device may decode; the rest go to the CPU path."""
    return [i for i, cell in enumerate(cells) if screen(cell, max_pixels).device]


class _Refused(Exception):
    """The marker walk found something the device must not be trusted with."""


def _judge(cell: bytes, frame: int, components: int, size: tuple[int, int], rgb_coded: bool, max_pixels: int) -> Screening:
    width, height = size
    if frame not in DEVICE_FRAMES:
        return Screening(False, f"SOF{frame - 0xC0} frame", size)
    if components not in DEVICE_COMPONENTS or rgb_coded:
        return Screening(False, f"{components} components{' (Adobe RGB-coded)' if rgb_coded else ''}", size)
    if width < 1 or height < 1 or width * height > max_pixels:
        return Screening(False, f"size {width}x{height} outside 1..{max_pixels:,} pixels", size)
    if not cell.endswith(EOI):
        return Screening(False, "truncated: no EOI at the end", size)
    return Screening(True, "", size)


def _walk_to_scan(data: bytes) -> tuple[int, int, tuple[int, int], bool]:
    """Walk the marker segments from SOI to the first SOS; return what the frame header says.

    Returns (SOF marker, components, (width, height), Adobe-RGB-coded). Raises ``_Refused``.
    """
    position, end = 2, len(data)
    frame: tuple[int, int, tuple[int, int]] | None = None
    rgb_coded = False
    while True:
        marker, position = _next_marker(data, position, end)
        if marker in STANDALONE:
            continue
        if marker in (0xD8, 0xD9):
            raise _Refused(f"marker FF{marker:02X} before the first scan")
        if position + 2 > end:
            raise _Refused("segment length past the end")
        (length,) = struct.unpack_from(">H", data, position)
        if length < 2 or position + length > end:
            raise _Refused(f"segment FF{marker:02X} of length {length} past the end")
        if marker == SOS:
            if frame is None:
                raise _Refused("scan before any frame header")
            return (*frame, rgb_coded)
        if marker in DEVICE_FRAMES or marker in OTHER_FRAMES:
            if frame is not None:
                raise _Refused("two frame headers")
            frame = (marker, *_frame_header(data[position + 2 : position + length]))
        elif marker == 0xEE:  # APP14: sliced only here, the walk copies no other segment
            rgb_coded = rgb_coded or _adobe_rgb(data[position + 2 : position + length])
        position += length


def _next_marker(data: bytes, position: int, end: int) -> tuple[int, int]:
    """The marker code at ``position`` (fill bytes FF skipped) and the position after it."""
    if position >= end or data[position] != 0xFF:
        raise _Refused(f"no marker at byte {position}")
    while position < end and data[position] == 0xFF:
        position += 1
    if position >= end or data[position] == 0x00:
        raise _Refused(f"no marker at byte {position}")
    return data[position], position + 1


def _frame_header(body: bytes) -> tuple[int, tuple[int, int]]:
    """(components, (width, height)) from a SOFn body; only 8-bit precision is accepted."""
    if len(body) < 6:
        raise _Refused("short frame header")
    precision, height, width, components = struct.unpack_from(">BHHB", body)
    if precision != 8:
        raise _Refused(f"{precision}-bit samples")
    if len(body) < 6 + 3 * components:
        raise _Refused("short frame header")
    return components, (width, height)


def _adobe_rgb(body: bytes) -> bool:
    """An Adobe APP14 segment with transform 0 on 3 components means RGB-coded, not YCbCr."""
    return body.startswith(b"Adobe") and len(body) >= 12 and body[11] == 0
