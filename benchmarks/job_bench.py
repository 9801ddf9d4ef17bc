"""End-to-end images/sec of one engine's job on a synthetic dataset, as one JSON row.

    python -m benchmarks.job_bench --engine ray --images 256 [--format jpeg|raw] [job options...]
    python -m benchmarks.job_bench --engine spark --images 2000 --rows-per-file 1 --size 64x48 --resize 40 --crop 32

The second form measures what each input file costs the engine (one-row files, a tiny model input):
run it at two file counts; the difference of their seconds over the difference of files is the per-file overhead.

Writes the dataset (``runners.make_dataset``) to a temp dir, runs ``runners.<engine>_job``
with ``--weights random`` into a fresh output, and appends the manifest's figures (images
counted from the output, seconds, images/sec, config, hardware, versions) to
``--results`` (default: printed only). Extra arguments go to the job unchanged.
"""

from __future__ import annotations

import argparse
import tempfile

from benchmarks.common import add_results_option, append_result
from job import driver
from runners import ENGINES, engine, make_dataset


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--engine", default="ray", choices=sorted(ENGINES), help="the engine whose job runs (runners.ENGINES)")
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--format", default="jpeg", choices=make_dataset.FORMATS)
    parser.add_argument("--rows-per-file", default="256", help="rows per input Parquet file (runners.make_dataset)")
    parser.add_argument("--size", default="500x375", help="WxH of the synthetic images (runners.make_dataset)")
    parser.add_argument("--note", default="", help="free text recorded with the row (e.g. 'machine shared')")
    args, job_args = parser.parse_known_args(argv)
    workdir = tempfile.mkdtemp(prefix="job-bench-")
    make_dataset.main(["--output", f"{workdir}/in", "--images", str(args.images), "--format", args.format,
                       "--rows-per-file", args.rows_per_file, "--size", args.size])
    manifest = driver.main(engine(args.engine), ["--input", f"{workdir}/in", "--output", f"{workdir}/out", "--weights", "random", *job_args])
    row = {
        "benchmark": "job",
        "engine": args.engine,
        "format": args.format,
        "images": manifest["counts"]["rows_out"],
        "rows_per_file": int(args.rows_per_file),
        "seconds": manifest["seconds"],
        "images_per_sec": manifest["images_per_sec"],
        **manifest["timeline"],  # startup_seconds, steady_images_per_sec, device_busy_fraction
        "job_args": job_args,
        "note": args.note,
        "config": manifest["config"],
        "hardware": manifest["hardware"],
        "versions": manifest["versions"],
        "settings": manifest["settings"],
    }
    append_result(args.results, row)
    print(f"{args.engine}: {row['images']} images in {row['seconds']:.1f} s = {row['images_per_sec']:.1f} images/s")
    return row


if __name__ == "__main__":
    main()
