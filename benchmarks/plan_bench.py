"""Planning a prefix of many Parquet files: seconds per file and the driver's peak memory.

    python -m benchmarks.plan_bench [--files 1000,10000,50000] [--rows-per-file 4] [--skip-id-check]

Makes each ``--files`` count of small Parquet files (``--rows-per-file`` rows of an id and a few
bytes of image each, 1,000 to a folder) under ``--root`` (default ``/tmp/plan_bench``; kept, and
reused by the next run of the same size), then plans them as the driver does before any work:
``list_data_files`` (the listing) and ``plan_listed`` (every footer read once, the columns of each
file against the first's, the ids unique across the input). Each size is planned in a fresh Python
process, so its peak resident memory (``ru_maxrss``) is the plan's and not the previous size's.
A plan grows with the files, not the images: files of a few rows measure the per-file cost alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result, best_of_fresh_runs

FILES_PER_FOLDER = 1_000


def make_files(root: str, files: int, rows_per_file: int) -> str:
    """``files`` Parquet files of ``rows_per_file`` rows under ``root``/<files>; reused when made before."""
    base = os.path.join(root, f"{files}x{rows_per_file}")
    done = base + ".made"  # beside the folder, not in it: the listing would count it
    if os.path.exists(done):
        return base
    for index in range(files):
        folder = os.path.join(base, f"day={index // FILES_PER_FOLDER:05d}")
        if index % FILES_PER_FOLDER == 0:
            os.makedirs(folder, exist_ok=True)
        first = index * rows_per_file
        table = pa.table({"id": [f"img-{first + row:010d}" for row in range(rows_per_file)],
                          "image": [b"\xff\xd8 not decoded by a plan"] * rows_per_file})
        pq.write_table(table, os.path.join(folder, f"part-{index:08d}.parquet"))
    open(done, "wb").close()
    return base


def plan_once(folder: str, skip_id_check: bool) -> dict:
    """Plan ``folder`` as the driver does, in this process; seconds of each step and the peak memory."""
    from job.config import JobConfig
    from job.input.data_files import list_data_files
    from job.prepare import plan_listed
    from storage import resolve

    location = resolve(folder)
    config = JobConfig(input=location.uri, output=None, skip_id_check=skip_id_check)
    started = time.perf_counter()
    listing = list_data_files(location)
    listed = time.perf_counter()
    plan = plan_listed(location, config, listing)
    planned = time.perf_counter()
    return {"files": len(plan.files), "rows": plan.rows, "list_seconds": round(listed - started, 3),
            "plan_seconds": round(planned - listed, 3), "seconds": round(planned - started, 3),
            "ms_per_file": round(1000 * (planned - started) / len(plan.files), 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1000,10000,50000", help="comma-separated file counts to plan")
    parser.add_argument("--rows-per-file", type=int, default=4)
    parser.add_argument("--skip-id-check", action="store_true", help="plan as --skip-id-check does (no id reads)")
    parser.add_argument("--root", default="/tmp/plan_bench", help="where the files are made (and kept)")
    parser.add_argument("--repeats", type=int, default=2, help="plans of each size, each in a fresh process; the best is kept")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: plan this folder and print the row
    add_results_option(parser)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(plan_once(args.one, args.skip_id_check)))
        return
    for files in (int(n) for n in args.files.split(",")):
        started = time.perf_counter()
        folder = make_files(args.root, files, args.rows_per_file)
        print(f"{files:,} files ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        command = [sys.executable, "-m", "benchmarks.plan_bench", "--one", folder,
                   *(["--skip-id-check"] if args.skip_id_check else [])]
        row = best_of_fresh_runs(command, args.repeats, "seconds")
        row |= {"rows_per_file": args.rows_per_file, "id_check": not args.skip_id_check}
        print(f"{row['files']:>9,} files: list {row['list_seconds']:.2f} s + plan {row['plan_seconds']:.2f} s = "
              f"{row['seconds']:.2f} s, {row['ms_per_file']:.3f} ms a file, peak {row['peak_rss_mb']} MB "
              f"(runs {row['runs_seconds']}, load {row['load_average']})")
        append_result(args.results, {"benchmark": "plan", **row})


if __name__ == "__main__":
    main()
