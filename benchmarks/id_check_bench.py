"""What the id check (``job.input.unique_ids``) costs the driver: seconds per million ids, local Parquet.

    python -m benchmarks.id_check_bench --ids 5000000 --files 50

Writes ``--ids`` unique ids (text like ``images/2026-11-01/8412093311278432.jpg``, about 40
bytes, or ``--int-ids``) into ``--files`` Parquet files with an image column of tiny cells
(the check reads only the id column), runs the check once untimed (warms the page cache:
the timed runs measure the check, not the disk), then ``--repeats`` timed runs. Appends one
JSON row to benchmarks/results/id_check.jsonl with the config, hardware and versions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result
from job.input.dataset_check import read_footers
from job.input.unique_ids import ID_READ_THREADS, check_unique_ids
from storage import resolve

ROW_GROUP_ROWS = 1024  # what make_dataset writes for images: many row groups per file, as in real inputs


def get_args_parser(add_help: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=add_help)
    add_results_option(parser)
    parser.add_argument("--ids", type=int, default=2_000_000, help="ids in the whole input")
    parser.add_argument("--files", type=int, default=20, help="Parquet files they are spread over")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after one untimed warm-up")
    parser.add_argument("--int-ids", action="store_true", help="int64 ids instead of text")
    parser.add_argument("--dir", default=None, help="where to write the files (default: a temporary folder)")
    return parser


def write_ids(folder: str, ids: int, files: int, int_ids: bool) -> list[str]:
    values = np.random.default_rng(0).permutation(ids).astype(np.int64) * 7919 + 10**15  # unique, unordered
    paths = []
    for index, chunk in enumerate(np.array_split(values, files)):
        column = pa.array(chunk)
        if not int_ids:
            column = pc.binary_join_element_wise("images/2026-11-01/", pc.cast(column, pa.string()), ".jpg", "")
        path = os.path.join(folder, f"part-{index:05d}.parquet")
        pq.write_table(pa.table({"image": pa.array([b"x"] * len(chunk)), "id": column}), path, row_group_size=ROW_GROUP_ROWS)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> dict:
    args = get_args_parser().parse_args(argv)
    folder = args.dir or tempfile.mkdtemp(prefix="id-check-bench-")
    location = resolve(folder)
    paths = write_ids(folder, args.ids, args.files, args.int_ids)
    files = [(f.path, f.rows) for f in read_footers(location, paths)]
    check_unique_ids(location, files, "id", as_text=not args.int_ids)  # warm-up, not timed
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        checked = check_unique_ids(location, files, "id", as_text=not args.int_ids).ids
        seconds.append(time.perf_counter() - start)
    assert checked == args.ids, (checked, args.ids)
    median = statistics.median(seconds)
    row = {"benchmark": "id_check", "ids": args.ids, "files": args.files, "id_type": "int64" if args.int_ids else "text",
           "threads": ID_READ_THREADS, "cpus": os.cpu_count(), "seconds": [round(s, 3) for s in seconds],
           "seconds_per_million_ids": round(median / args.ids * 1e6, 3), "hash_bytes_per_id": 8}
    print(f"{args.ids} {row['id_type']} ids in {args.files} files: median {median:.2f} s, "
          f"{row['seconds_per_million_ids']:.3f} s per million ids ({os.cpu_count()} cpus)")
    append_result(args.results, row)
    return row


if __name__ == "__main__":
    main()
