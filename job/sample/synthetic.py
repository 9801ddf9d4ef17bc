"""Synthetic photo-like images, and Parquet image datasets written from them or from rows you have.

Use ``write_synthetic`` to make test and benchmark input of any size: one process per output
file, each file's images drawn from its own seed, so a seed gives the same dataset whatever the
number of processes. Use ``write_dataset`` for rows already in hand (the built-in sample, test
sets, a folder's files). Rows are ``id`` and ``image``: encoded bytes, or raw HWC uint8 pixels
with ``height``/``width``/``channels`` columns. Imports no engine.
"""

from __future__ import annotations

import io
import math
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from job.errors import JobError
from storage import Location, storage_errors

FORMATS = ("jpeg", "png", "webp", "raw")
RAW_SHAPE = (256, 256, 3)  # the reference benchmark's pre-decoded format
ROW_GROUP_ROWS = 64  # small row groups let readers stream a file instead of loading it whole

Row = tuple[str, bytes]  # (id, image cell)


def synthetic_image(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    """A photo-like RGB image: a smooth random colour field plus fine noise."""
    coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BICUBIC), np.int16)
    noise = rng.normal(0, 12, size=(height, width, 3))
    return Image.fromarray(np.clip(field + noise, 0, 255).astype(np.uint8), "RGB")


def textured_image(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    """A textured photo-like RGB image: sharp-edged shapes over a colour field, a 1/f texture (the spectrum of
    natural images) and sensor grain. At 500x375, JPEG quality 90: about 98 KB, as photos of that size weigh, where
    ``synthetic_image`` weighs 71 KB: the decode and the resize cost what they cost on photos, and resamplers
    differ as they do on photos' edges and fine detail (mean differences within 0.2 level of real photos').
    """
    base = Image.fromarray(rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8), "RGB").resize(
        (width, height), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(base)
    for _ in range(TEXTURE_SHAPES):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        box = (x0, y0, x0 + int(rng.integers(20, max(21, width // 2))), y0 + int(rng.integers(20, max(21, height // 2))))
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    texture = one_over_f(rng, width, height)
    pixels = np.asarray(base, np.float32) + TEXTURE_LEVELS * texture + rng.normal(0, GRAIN_LEVELS, (height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


# textured_image's make-up: shapes, the texture's and the grain's standard deviations in levels (about 98 KB a
# 500x375 JPEG at quality 90; 34 and 6 give 92 KB, 30 and 8 give 88 KB).
TEXTURE_SHAPES = 8
TEXTURE_LEVELS = 40.0
GRAIN_LEVELS = 6.0


def one_over_f(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """(height, width, 3) noise of unit deviation whose amplitude falls as 1/frequency, mostly shared by the three
    channels (a photo's texture is mostly in its luminance)."""
    fy, fx = np.fft.fftfreq(height)[:, None], np.fft.rfftfreq(width)[None, :]
    frequency = np.hypot(fx, fy)
    frequency[0, 0] = 1.0
    channels = []
    for _ in range(3):
        spectrum = np.fft.rfft2(rng.normal(size=(height, width))) / frequency
        spectrum[0, 0] = 0.0
        channel = np.fft.irfft2(spectrum, s=(height, width))
        channels.append(channel / max(channel.std(), 1e-9))
    shared = channels[0]
    return np.stack([0.7 * shared + 0.3 * c for c in channels], axis=-1).astype(np.float32)


def encode(image: Image.Image, fmt: str) -> bytes:
    """Encode for the dataset; ``raw`` is the HWC uint8 buffer."""
    if fmt == "raw":
        return np.asarray(image, dtype=np.uint8).tobytes()
    buffer = io.BytesIO()
    image.save(buffer, format=fmt.upper(), **({"quality": 90} if fmt in ("jpeg", "webp") else {}))
    return buffer.getvalue()


def synthetic_rows(
    count: int, fmt: str, size: tuple[int, int], seed: int | np.random.SeedSequence, first: int = 0
) -> Iterator[Row]:
    """``count`` images from one random stream, ids ``img-<first>`` on; ``size`` is WxH (raw: RAW_SHAPE)."""
    rng = np.random.default_rng(seed)
    width, height = (RAW_SHAPE[1], RAW_SHAPE[0]) if fmt == "raw" else size
    for i in range(first, first + count):
        yield f"img-{i:08d}", encode(synthetic_image(rng, width, height), fmt)


def file_seed(seed: int, index: int) -> np.random.SeedSequence:
    """File ``index``'s own stream of ``seed``: what ``SeedSequence(seed).spawn()`` gives it, in any process."""
    return np.random.SeedSequence(seed, spawn_key=(index,))


@dataclass(frozen=True)
class SyntheticSpec:
    """A synthetic dataset: which images, and how they are cut into files."""

    images: int  # rows in all
    fmt: str = "jpeg"  # one of FORMATS
    size: tuple[int, int] = (500, 375)  # WxH, ImageNet's median; raw is always RAW_SHAPE
    seed: int = 0  # with rows_per_file, fixes every pixel
    rows_per_file: int = 256  # also the unit of work: one process writes one file

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise JobError(f"format {self.fmt!r}: expected one of {', '.join(FORMATS)}")
        for name in ("images", "rows_per_file"):
            if getattr(self, name) < 1:
                raise JobError(f"{name}={getattr(self, name)}: expected a positive number")
        if self.seed < 0:
            raise JobError(f"seed={self.seed}: expected 0 or more (numpy seeds are non-negative)")

    @property
    def files(self) -> int:
        return math.ceil(self.images / self.rows_per_file)

    def rows_of(self, index: int) -> Iterator[Row]:
        """File ``index``'s rows, from its own seed, so no file depends on another being made first."""
        first = index * self.rows_per_file
        count = min(self.rows_per_file, self.images - first)
        return synthetic_rows(count, self.fmt, self.size, file_seed(self.seed, index), first)


def write_synthetic(location: Location, spec: SyntheticSpec, workers: int) -> int:
    """Write ``spec`` as ``part-NNNNN.parquet`` under ``location``, ``workers`` files at a time; returns rows."""
    if workers < 1:
        raise JobError(f"workers={workers}: expected a positive number of processes")
    tasks = [(location, spec, index) for index in range(spec.files)]
    return sum(_map_files(_write_synthetic_file, tasks, min(workers, spec.files)))


def _write_synthetic_file(location: Location, spec: SyntheticSpec, index: int) -> int:
    rows = list(spec.rows_of(index))
    write_file(location, index, rows, raw=spec.fmt == "raw")
    return len(rows)


def _map_files(write: Callable[..., int], tasks: list[tuple], workers: int) -> list[int]:
    """``write(*task)`` for each task, in task order: in this process for one worker, else in a process pool."""
    if workers == 1:  # no pool to start: the same function writes the same files
        return [write(*task) for task in tasks]
    # Spawn, not fork: this process may hold pyarrow's and the S3 client's threads, which a fork
    # would copy mid-flight; and unlike forkserver it leaves no server process behind, on any OS.
    # The Location pickles whole (RetryingS3FileSystem keeps its retries across pickling).
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(write, *task) for task in tasks]
        try:
            return [future.result() for future in futures]
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # one failed file fails the command: start no more
            raise


def write_dataset(location: Location, rows: Iterable[Row], rows_per_file: int, raw: bool = False) -> int:
    """Write rows in this process as ``part-NNNNN.parquet`` files under ``location``; returns the row count."""
    written, chunk = 0, []
    for row in rows:
        chunk.append(row)
        if len(chunk) == rows_per_file:
            write_file(location, written // rows_per_file, chunk, raw)
            written, chunk = written + len(chunk), []
    if chunk:
        write_file(location, written // rows_per_file, chunk, raw)
        written += len(chunk)
    return written


def write_file(location: Location, index: int, rows: list[Row], raw: bool) -> None:
    """Write ``part-<index>.parquet``; ``raw`` adds the shape columns the job reads raw pixels with."""
    ids, images = zip(*rows)
    columns = {"id": pa.array(ids, pa.string()), "image": pa.array(images, pa.binary())}
    if raw:
        for name, value in zip(("height", "width", "channels"), RAW_SHAPE):
            columns[name] = pa.array([value] * len(rows), pa.int32())
    path = location.join(f"part-{index:05d}.parquet")
    with storage_errors(location.uri_of(path)):
        location.filesystem.create_dir(location.path, recursive=True)
        # No dictionary pages: every image (and id) is unique, so a dictionary only adds a decode
        # step to every read (raw 256x256x3 rows read 3x slower with one: BENCHMARKS.md).
        pq.write_table(pa.table(columns), path, filesystem=location.filesystem, row_group_size=ROW_GROUP_ROWS,
                       use_dictionary=False)
