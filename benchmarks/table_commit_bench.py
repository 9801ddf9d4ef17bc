"""A night's table commit: time to commit 100 new parts and remove 10 on a table of 10,000, night after night.

    python -m benchmarks.table_commit_bench [--format delta|iceberg] [--parts 10000] [--new 100] [--removed 10]
                                            [--nights 30] [--out /tmp/table_commit_bench] [--results FILE.jsonl]

Writes ``--parts`` tiny Parquet parts (two rows each, the id and error columns) under ``--out`` on
the local disk and commits them as the table's first version (``job.night.commit.commit_run``,
exactly what ``job.night.finish`` calls after the final check). Then ``--nights`` nights each write
``--new`` parts and commit them with ``--removed`` of the table's parts removed, in one commit. It
times each commit (file statistics, the commit itself and, for Delta, the log checkpoint every
10 commits), so the 2nd night's commit and the last one's are compared: a log read from its
latest checkpoint costs the same on the 365th night as on the 2nd. Writing the parts is not timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result
from job.config import JobConfig
from job.input.data_files import FileIdentity
from job.night.commit import commit_run
from job.night.record import Snapshot, TableFile
from storage import resolve

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("error", pa.string())])


def write_parts(out: str, names: list[str]) -> None:
    for name in names:
        pq.write_table(pa.table({"id": [f"{name}:0", f"{name}:1"], "error": [None, None]}, schema=SCHEMA), f"{out}/{name}")


def snapshot_of(table: dict[str, int], number: int, version: int | None, retired: dict) -> Snapshot:
    files = {name: TableFile(name, FileIdentity(1, 1), rows, 0) for name, rows in table.items()}
    return Snapshot(files, {}, None, number=number, version=version, retired=retired)


def run(table_format: str, parts: int, new: int, removed: int, nights: int, out: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    config = JobConfig(input="/nowhere/in", output=out, table_format=table_format)
    output = resolve(out)
    table = {f"part-{i:06d}.parquet": 2 for i in range(parts)}
    write_parts(out, list(table))
    began = time.perf_counter()
    committed = commit_run(output, config, None, table, [], SCHEMA, "night-1")
    seconds = {1: time.perf_counter() - began}
    made = parts
    for night in range(2, nights + 2):
        previous = snapshot_of(table, committed.number, committed.version, committed.retired)
        added = [f"part-{made + i:06d}.parquet" for i in range(new)]
        made += new
        write_parts(out, added)
        leaving = sorted(table)[:removed]
        table = {name: rows for name, rows in table.items() if name not in leaving} | {name: 2 for name in added}
        began = time.perf_counter()
        committed = commit_run(output, config, previous, table, leaving, SCHEMA, f"night-{night}")
        seconds[night] = time.perf_counter() - began
    late = nights + 1
    return {"format": table_format, "parts": parts, "new": new, "removed": removed, "nights": nights,
            "first_commit_s": round(seconds[1], 3), "second_night_s": round(seconds[2], 3),
            "late_night": late, "late_night_s": round(seconds[late], 3),
            "max_night_s": round(max(s for n, s in seconds.items() if n > 1), 3), "version": committed.version}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("delta", "iceberg"), default="delta")
    parser.add_argument("--parts", type=int, default=10_000)
    parser.add_argument("--new", type=int, default=100)
    parser.add_argument("--removed", type=int, default=10)
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--out", default="/tmp/table_commit_bench", help="where the table is written (cleared first)")
    add_results_option(parser)
    args = parser.parse_args()
    row = run(args.format, args.parts, args.new, args.removed, args.nights, os.path.join(args.out, args.format))
    print(append_result(args.results, {"bench": "table_commit", **row}))


if __name__ == "__main__":
    main()
