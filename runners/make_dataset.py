"""python -m runners.make_dataset: write a Parquet image dataset, locally or to S3.

Rows are ``id`` (string) and ``image``: encoded bytes (``--format jpeg|png|webp``), or the
reference benchmark's raw uint8 pixels (``--format raw``: 256x256x3, with
``height``/``width``/``channels`` columns so the job knows the shape). Images are synthetic
(``job.sample.synthetic``: photo-like, one process per file, the same for a seed whatever
``--workers``), or the files of ``--from-folder DIR`` as they are.

    python -m runners.make_dataset --output s3://bucket/images/ --images 10000 --format jpeg
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence

from job.cli import positive_int, run_main, uri_argument
from job.errors import JobError
from job.sample.synthetic import FORMATS, Row, SyntheticSpec, write_dataset, write_synthetic
from storage import require_bucket, resolve

DEFAULT_IMAGES = 256
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")


def folder_rows(folder: str, count: int | None) -> Iterator[Row]:
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


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners.make_dataset", description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, type=uri_argument, help="s3://bucket/prefix/ or a local directory")
    parser.add_argument("--images", type=positive_int(1), help=f"number of images (default: {DEFAULT_IMAGES}, or all files of --from-folder)")
    parser.add_argument("--format", choices=FORMATS, default="jpeg", help="encoding of synthetic images (default: jpeg)")
    parser.add_argument("--size", type=_size, default=(500, 375), help="WxH of synthetic images (default: 500x375, ImageNet's median)")
    parser.add_argument("--from-folder", help="use the image files under this directory instead of synthetic ones")
    parser.add_argument("--rows-per-file", type=positive_int(1), default=256, help="rows per Parquet file (default: 256)")
    parser.add_argument("--seed", type=positive_int(0), default=0, help="seed of the synthetic images (default: 0)")
    parser.add_argument("--workers", type=positive_int(1), default=os.cpu_count() or 1,
                        help="processes writing synthetic files, one file each at a time (default: all cores)")
    parser.add_argument("--s3-endpoint-url", help="S3-compatible endpoint (default: AWS_ENDPOINT_URL)")
    return parser


def _size(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected WxH such as 500x375, got {text!r}")
    return int(parts[0]), int(parts[1])


def main(argv: Sequence[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    location = resolve(args.output, args.s3_endpoint_url)
    require_bucket(location, "--output")  # before any image is made; the command creates no bucket
    if args.from_folder:  # files as they are: reading them is the work, one process does it
        count = write_dataset(location, folder_rows(args.from_folder, args.images), args.rows_per_file)
    else:
        spec = SyntheticSpec(args.images or DEFAULT_IMAGES, args.format, args.size, args.seed, args.rows_per_file)
        count = write_synthetic(location, spec, args.workers)
    print(f"wrote {count} images to {args.output}", file=sys.stderr)
    return count


def cli() -> int:
    """The command: ``main`` with user-fixable errors as one line and exit code 2."""
    return run_main(main)


if __name__ == "__main__":
    sys.exit(cli())
