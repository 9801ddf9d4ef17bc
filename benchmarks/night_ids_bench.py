"""What an --incremental night's id work costs the driver as the table grows: seconds and peak memory.

    python -m benchmarks.night_ids_bench --table-ids 10000000 --new-files 10 [--results FILE.jsonl]

Writes a table's ids index (``job.ids.index.write_index``: one segment) of ``--table-ids`` synthetic
64-bit hashes over ``--table-files`` input files, and ``--new-files`` Parquet files of 1,000 new text ids
each, under a temporary folder. Then, in a fresh process each time (``--repeats``), does what
the driver does with them on such a night: read the index's footers, check the new ids against every
kept part (``job.night.new_ids.check_new_ids``), hold the table's ids unique once the new parts are in
(``job.night.check.require_unique``: the final check, the new parts' ids being the new files', asked of the
index for the kept parts), and write the index's next segment (``IdIndex.extended``). Prints the median seconds
(with the final check and the next segment's share) and the largest peak memory (the process's resident set, as
the kernel counts it, and how much of it the night added above the process's own after its imports).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result
from job.input.plan import InputFile, InputPlan
from job.ids.index import IdIndex, write_index
from job.input.unique_ids import hashes_of
from job.night.new_ids import check_new_ids
from job.ids.hashes_by_file import HashesByFile
from job.night.check import require_unique
from storage import resolve

INDEX = "_index/bench.ids"
NEW_FILE_IDS = 1000


def write_table(folder: str, table_ids: int, table_files: int, new_files: int) -> None:
    """The table's index under ``folder``/out, the night's new files under ``folder``/in."""
    rng = np.random.default_rng(0)
    hashes = {f"old-{i:07d}.parquet": chunk for i, chunk in
              enumerate(np.array_split(rng.integers(0, 2**64, table_ids, np.uint64, endpoint=False), table_files))}
    write_index(resolve(f"{folder}/out"), "bench", hashes)
    os.makedirs(f"{folder}/in", exist_ok=True)
    for k in range(new_files):
        ids = [f"images/2026-11-25/{k}-{i}.jpg" for i in range(NEW_FILE_IDS)]
        pq.write_table(pa.table({"image": [b"x"] * len(ids), "id": ids}), f"{folder}/in/new-{k:05d}.parquet")


def night(folder: str) -> dict:
    """The driver's id work of one night over ``folder`` (written by ``write_table``); seconds and peak memory."""
    source, output = resolve(f"{folder}/in"), resolve(f"{folder}/out")
    new = [InputFile(f"{source.path}/{name}", NEW_FILE_IDS) for name in sorted(os.listdir(f"{folder}/in"))]
    plan = InputPlan(source, tuple(new), "id", "image", shape_columns=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    index = IdIndex.read(output, INDEX)
    kept = {name: f"part-{name}" for name in index.files}
    check_new_ids(plan, new, output, index, kept)
    checked = time.perf_counter()
    # The night's parts as the final check reads them: the new files' ids.
    written = {os.path.basename(f.path): hashes_of(source, [(f.path, f.rows)], "id", True) for f in new}
    parts = HashesByFile.of({f"part-{name}": h for name, h in written.items()})
    require_unique(output, parts, True, lambda hashes: {kept[f]: h for f, h in index.held(hashes, kept).items()})
    index.extended("next", [*kept, *written], written)
    ended = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": ended - started, "final_seconds": ended - checked, "peak_mb": (peak - before) / 1024,
            "peak_rss_mb": peak / 1024, "kept_ids": sum(segment.rows for segment in index.segments)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--table-ids", type=int, default=1_000_000, help="ids the table holds (default: 1,000,000)")
    parser.add_argument("--table-files", type=int, default=1000, help="input files (parts) they are spread over")
    parser.add_argument("--new-files", type=int, default=10, help=f"the night's new files, {NEW_FILE_IDS} ids each")
    parser.add_argument("--repeats", type=int, default=3, help="nights timed, each in a fresh process")
    # The child processes: one writes the table, one times each night. Linux keeps a process's peak memory
    # across exec, so a parent that had held the table would lend each night its own peak.
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--night", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write:
        write_table(args.write, args.table_ids, args.table_files, args.new_files)
        return {}
    if args.night:
        print(json.dumps(night(args.night)))
        return {}
    folder = tempfile.mkdtemp(prefix="night-ids-bench-")
    this = [sys.executable, "-m", "benchmarks.night_ids_bench"]
    subprocess.run([*this, *(argv if argv is not None else sys.argv[1:]), "--write", folder], check=True)
    runs = [json.loads(subprocess.run([*this, "--night", folder], check=True, capture_output=True, text=True).stdout)
            for _ in range(args.repeats)]
    assert all(r["kept_ids"] == args.table_ids for r in runs), runs
    row = {"benchmark": "night_ids", "table_ids": args.table_ids, "table_files": args.table_files,
           "new_files": args.new_files, "new_ids": args.new_files * NEW_FILE_IDS,
           "seconds": [round(r["seconds"], 3) for r in runs], "median_seconds": round(statistics.median(r["seconds"] for r in runs), 3),
           "median_final_seconds": round(statistics.median(r["final_seconds"] for r in runs), 3),
           "peak_mb": round(max(r["peak_mb"] for r in runs), 1),
           "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1)}
    print(f"{args.table_ids} table ids, {row['new_ids']} new: median {row['median_seconds']} s "
          f"({row['median_final_seconds']} s the final check and the next segment), "
          f"peak {row['peak_rss_mb']} MB, +{row['peak_mb']} MB over the process's own after its imports")
    append_result(args.results, row)
    return row


if __name__ == "__main__":
    main()
