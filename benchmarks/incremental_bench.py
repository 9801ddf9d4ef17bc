"""What a nightly --incremental run costs: a full run, a night with 1% new files, a night with nothing new.

    python -m benchmarks.incremental_bench --engine ray --files 100 --rows-per-file 8 [--results FILE.jsonl]

Writes a dataset of ``--files`` Parquet files of tiny JPEGs, then runs the engine's command as a
user would (``python -m runners.<engine>_job ... --incremental``, a subprocess timed from outside,
its imports and engine start included) three times into one output: the first night (the whole
input), a night after ``--new-percent`` of new files were added, and a night with nothing new.
It also times the input listing alone, which every incremental night pays. The targets, so that a
night costs what it adds rather than what the input holds: the 1% night under 5% of the full night's
wall time plus the engine's start; the nothing-new night under 3 s plus the listing.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time

from benchmarks.common import add_results_option, append_result
from job.input.data_files import list_data_files
from job.sample.synthetic import synthetic_rows, write_file
from runners import ENGINES
from storage import resolve


def night(engine: str, source: str, output: str, extra: list[str]) -> tuple[float, dict]:
    """(wall seconds, manifest) of one --incremental run of the engine's command."""
    command = [sys.executable, "-m", ENGINES[engine].module, "--input", source, "--output", output, "--weights", "random",
               "--incremental", *extra]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    with open(f"{output}/_SUCCESS.json") as f:
        return seconds, json.load(f)


def add_files(source: str, first: int, files: int, rows_per_file: int) -> None:
    """``files`` new input files after the first ``first``, with ids of their own."""
    rows = synthetic_rows(files * rows_per_file, "jpeg", (64, 48), seed=first, first=first * rows_per_file)
    location = resolve(source)
    for k in range(files):
        write_file(location, first + k, [next(rows) for _ in range(rows_per_file)], raw=False)


def listing_seconds(source: str) -> float:
    started = time.perf_counter()
    list_data_files(resolve(source))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--engine", default="ray", choices=sorted(ENGINES), help="the engine whose job runs (runners.ENGINES)")
    parser.add_argument("--files", type=int, default=100, help="input files of the first night (default: 100)")
    parser.add_argument("--rows-per-file", type=int, default=8)
    parser.add_argument("--new-percent", type=float, default=1.0, help="new files for the second night, %% of --files (default: 1)")
    parser.add_argument("--note", default="", help="free text recorded with the row (e.g. 'machine shared')")
    args, extra = parser.parse_known_args(argv)
    work = tempfile.mkdtemp(prefix="incremental-bench-")
    source, output = f"{work}/in", f"{work}/out"
    add_files(source, 0, args.files, args.rows_per_file)
    full, first = night(args.engine, source, output, extra)
    new = max(1, math.ceil(args.files * args.new_percent / 100))
    add_files(source, args.files, new, args.rows_per_file)
    grown, second = night(args.engine, source, output, extra)
    nothing, third = night(args.engine, source, output, extra)
    assert third["run_id"] == second["run_id"], "the nothing-new night wrote a manifest"
    row = {
        "benchmark": "incremental", "engine": args.engine, "files": args.files, "rows_per_file": args.rows_per_file,
        "new_files": new, "full_seconds": round(full, 2), "new_files_seconds": round(grown, 2),
        "nothing_new_seconds": round(nothing, 2), "listing_seconds": round(listing_seconds(source), 3),
        "new_files_startup_seconds": second["timeline"]["startup_seconds"],
        "new_files_of_full": round(grown / full, 3),
        "ran": {"full": first["input_files"]["run"], "new_files": second["input_files"]["run"]},
        "job_args": extra, "note": args.note,
    }
    append_result(args.results, row)
    print(f"{args.engine}: full night {full:.1f} s ({args.files} files); +{new} files {grown:.1f} s "
          f"({row['new_files_of_full']:.1%} of full, start-up {row['new_files_startup_seconds']} s); nothing new "
          f"{nothing:.1f} s (listing {row['listing_seconds']} s)")
    return row


if __name__ == "__main__":
    main()
