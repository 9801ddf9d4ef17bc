"""python -m runners.make_dataset: write a Parquet image dataset, locally or to S3.

Rows are ``id`` (string) and ``image``: encoded bytes (``--format jpeg|png|webp``), or the
reference benchmark's raw uint8 pixels (``--format raw``: 256x256x3 by default, with
``height``/``width``/``channels`` columns so the job knows the shape). Images are synthetic
(smooth colour fields with texture, so they compress like photos), or the files of
``--from-folder DIR`` as they are.

    python -m runners.make_dataset --output s3://bucket/images/ --images 10000 --format jpeg
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from job.cli import run_main
from job.errors import JobError
from storage import Location, resolve, storage_errors

FORMATS = ("jpeg", "png", "webp", "raw")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
RAW_SHAPE = (256, 256, 3)  # the reference benchmark's pre-decoded format
ROW_GROUP_ROWS = 64  # small row groups let readers stream a file instead of loading it whole


def synthetic_image(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    """A photo-like RGB image: a smooth random colour field plus fine noise."""
    coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BICUBIC), np.int16)
    noise = rng.normal(0, 12, size=(height, width, 3))
    return Image.fromarray(np.clip(field + noise, 0, 255).astype(np.uint8), "RGB")


def encode(image: Image.Image, fmt: str) -> bytes:
    """Encode for the dataset; ``raw`` is the HWC uint8 buffer."""
    if fmt == "raw":
        return np.asarray(image, dtype=np.uint8).tobytes()
    buffer = io.BytesIO()
    image.save(buffer, format=fmt.upper(), **({"quality": 90} if fmt in ("jpeg", "webp") else {}))
    return buffer.getvalue()


def synthetic_rows(count: int, fmt: str, size: tuple[int, int], seed: int) -> Iterator[tuple[str, bytes]]:
    rng = np.random.default_rng(seed)
    width, height = (RAW_SHAPE[1], RAW_SHAPE[0]) if fmt == "raw" else size
    for i in range(count):
        yield f"img-{i:08d}", encode(synthetic_image(rng, width, height), fmt)


def folder_rows(folder: str, count: int | None) -> Iterator[tuple[str, bytes]]:
    """The image files under ``folder`` as they are, ids being their relative paths."""
    paths = sorted(
        os.path.join(root, name)
        for root, _, names in os.walk(folder)
        for name in names
        if name.lower().endswith(IMAGE_SUFFIXES)
    )
    if not paths:
        raise JobError(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)}); check --from-folder")
    for path in paths[:count]:
        with open(path, "rb") as f:
            yield os.path.relpath(path, folder), f.read()


def write_dataset(location: Location, rows: Iterator[tuple[str, bytes]], rows_per_file: int, raw: bool = False) -> int:
    """Write rows as ``part-NNNNN.parquet`` files under ``location``; returns the row count."""
    written, chunk = 0, []
    for row in rows:
        chunk.append(row)
        if len(chunk) == rows_per_file:
            _write_file(location, written // rows_per_file, chunk, raw)
            written, chunk = written + len(chunk), []
    if chunk:
        _write_file(location, written // rows_per_file, chunk, raw)
        written += len(chunk)
    return written


def _write_file(location: Location, index: int, rows: list[tuple[str, bytes]], raw: bool) -> None:
    ids, images = zip(*rows)
    columns = {"id": pa.array(ids, pa.string()), "image": pa.array(images, pa.binary())}
    if raw:
        for name, value in zip(("height", "width", "channels"), RAW_SHAPE):
            columns[name] = pa.array([value] * len(rows), pa.int32())
    path = location.join(f"part-{index:05d}.parquet")
    with storage_errors(location.uri_of(path)):
        location.filesystem.create_dir(location.path, recursive=True)
        pq.write_table(pa.table(columns), path, filesystem=location.filesystem, row_group_size=ROW_GROUP_ROWS)


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners.make_dataset", description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="s3://bucket/prefix/ or a local directory")
    parser.add_argument("--images", type=int, help="number of images (default: 256, or all files of --from-folder)")
    parser.add_argument("--format", choices=FORMATS, default="jpeg", help="encoding of synthetic images (default: jpeg)")
    parser.add_argument("--size", type=_size, default=(500, 375), help="WxH of synthetic images (default: 500x375, ImageNet's median)")
    parser.add_argument("--from-folder", help="use the image files under this directory instead of synthetic ones")
    parser.add_argument("--rows-per-file", type=int, default=256, help="rows per Parquet file (default: 256)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic images (default: 0)")
    parser.add_argument("--s3-endpoint-url", help="S3-compatible endpoint (default: AWS_ENDPOINT_URL)")
    return parser


def _size(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected WxH such as 500x375, got {text!r}")
    return int(parts[0]), int(parts[1])


def main(argv: Sequence[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if (args.images is not None and args.images < 1) or args.rows_per_file < 1:
        raise JobError("--images and --rows-per-file must be positive")
    if args.from_folder:
        rows = folder_rows(args.from_folder, args.images)
    else:
        rows = synthetic_rows(args.images or 256, args.format, args.size, args.seed)
    location = resolve(args.output, args.s3_endpoint_url)
    count = write_dataset(location, rows, args.rows_per_file, raw=args.format == "raw" and not args.from_folder)
    print(f"wrote {count} images to {args.output}", file=sys.stderr)
    return count


if __name__ == "__main__":
    sys.exit(run_main(main))
