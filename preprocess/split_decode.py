"""The CPU worker's half of ``--decode gpu|auto``: screen, route, decode this worker's share.

Use ``preprocess_routed`` in the CPU stage instead of ``preprocess_batch`` when a device decodes
too. Each row ends in exactly one of three places:
- an error (the CPU path's own words: the screen sends every doubtful cell to the CPU path);
- ``pixels``: decoded and cropped here, uint8, like ``preprocess_batch``;
- ``encoded``: a JPEG the screen found whole, to be decoded by ``preprocess.device_stage``.
Raw pixel cells never come here: they need no decode (``preprocess_batch`` handles them).
No torch: the CPU stage imports only Pillow, simplejpeg, OpenCV and numpy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from preprocess.batch import CpuResize, preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS
from preprocess.routing import DecodeRouter
from preprocess.screen import screen
from preprocess.recipe import IMAGENET_RECIPE, Recipe


@dataclass
class RoutedBatch:
    errors: list[str | None]  # (N,) per row; None: the row gets a prediction
    cpu_rows: list[int]  # rows decoded here, ascending
    pixels: np.ndarray  # (len(cpu_rows), crop, crop, 3) uint8; zeros where the row has an error
    device_rows: list[int]  # rows sent encoded, ascending; disjoint from cpu_rows
    encoded: list[bytes]  # (len(device_rows),) their JPEG bytes, screened whole

    def __post_init__(self) -> None:
        assert len(self.pixels) == len(self.cpu_rows) and len(self.encoded) == len(self.device_rows)

    @property
    def rows(self) -> int:
        return len(self.errors)


def preprocess_routed(
    cells: Sequence[bytes | None],
    router: DecodeRouter,
    recipe: Recipe = IMAGENET_RECIPE,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    cpu_resize: CpuResize = "fast",
) -> RoutedBatch:
    """Screen every cell, let ``router`` split the device-decodable ones, decode the rest here (``cpu_resize``: how)."""
    started = time.perf_counter()
    screenings = [screen(cell, max_pixels) for cell in cells]
    candidates = [i for i, s in enumerate(screenings) if s.device]
    pixel_counts = [screenings[i].size[0] * screenings[i].size[1] for i in candidates]
    _, device_rows = router.split(candidates, pixel_counts)
    sent = set(device_rows)
    cpu_rows = [i for i in range(len(cells)) if i not in sent]
    decode_started = time.perf_counter()
    decoded = preprocess_batch([cells[i] for i in cpu_rows], recipe, max_pixels=max_pixels, cpu_resize=cpu_resize)
    finished = time.perf_counter()
    router.record_batch(finished - started, len(cpu_rows), finished - decode_started)
    errors: list[str | None] = [None] * len(cells)
    for row, error in zip(cpu_rows, decoded.errors):
        errors[row] = error
    return RoutedBatch(errors, cpu_rows, decoded.pixels, device_rows, [bytes(cells[i]) for i in device_rows])
