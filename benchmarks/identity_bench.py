"""What a local file's change time costs the listing every night: ``list_data_files`` with and without it.

    python -m benchmarks.identity_bench [--files 200000] [--folders 200] [--repeats 3] [--results FILE.jsonl]

A local input file's identity (``job.input.data_files.FileIdentity``) carries its inode's change
time, so that a rewrite that kept size and mtime (``cp -p``, ``rsync -t``) is redone by
``--incremental``: one ``stat`` per file, which pyarrow's listing does not give. This times the
listing of ``--files`` empty files (made under ``--root`` by ``benchmarks.listing_bench``'s
``make_local``, kept and reused) best of ``--repeats``, with the change time and without it (the
``stat`` left out, as the listing was before), in one process, alternating, page cache warm.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.common import add_results_option, append_result
from benchmarks.listing_bench import make_local
from job.input import data_files
from storage import resolve


def best_listing(root: str, repeats: int) -> tuple[float, int]:
    """(best seconds, files) of ``list_data_files`` over ``root``."""
    times, files = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        files = len(data_files.list_data_files(resolve(root)))
        times.append(time.perf_counter() - started)
    return min(times), files


def without_change_time(measure: Callable[[], tuple[float, int]]) -> tuple[float, int]:
    """``measure()`` with the listing's ``stat`` per file left out."""
    kept = data_files._ctime_ns
    data_files._ctime_ns = lambda location, path: None
    try:
        return measure()
    finally:
        data_files._ctime_ns = kept


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--folders", type=int, default=200)
    parser.add_argument("--root", default="/tmp/identity_bench", help="where the files are made (and kept)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--note", default="", help="free text recorded with the row (e.g. 'machine shared')")
    args = parser.parse_args(argv)
    root = make_local(args.root, args.files, args.folders)
    measure = lambda: best_listing(root, args.repeats)  # noqa: E731
    with_first, files = measure()
    without, _ = without_change_time(measure)
    with_again, _ = measure()  # either side of the other: a machine that got busier meanwhile shows
    with_time = min(with_first, with_again)
    row = {"benchmark": "identity", "files": files, "listing_seconds": round(with_time, 3),
           "listing_without_change_time_seconds": round(without, 3),
           "change_time_us_per_file": round((with_time - without) / files * 1e6, 2), "note": args.note}
    append_result(args.results, row)
    print(f"{files:,} files: listing {with_time:.2f} s with the change time, {without:.2f} s without: "
          f"{row['change_time_us_per_file']} us per file")
    return row


if __name__ == "__main__":
    main()
