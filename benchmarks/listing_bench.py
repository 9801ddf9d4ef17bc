"""Listing a large prefix of image objects: one recursive listing against ``job.input.data_files.list_tree``, the parallel one.

    python -m benchmarks.listing_bench [--local-files 1000000] [--folders 1000] [--s3-objects 20000] [--s3-folders 100]

Makes ``--local-files`` empty ``*.jpg`` files in ``--folders`` folders under ``--root`` (default
``/tmp/listing_bench``; kept, and reused by the next run of the same size), and ``--s3-objects``
objects in ``--s3-folders`` folders on moto's S3 server on 127.0.0.1 (filled through moto's backend in
this process: 200,000 PUTs over HTTP would take longer than the listing measured). moto answers each
``ListObjectsV2`` page by listing and sorting the whole bucket, so its time grows with the square of
the objects (200,000 had not listed once after about 5 minutes on the 2-vCPU VM): 20,000 by default, and moto's
figures compare the two listings with each other, not with S3. For each it times,
best of ``--repeats``: pyarrow's one recursive ``FileSelector`` (what the job did before), the
parallel ``list_tree``, and, for the local files, the whole plan before the first group can be
scheduled (``list_data_files`` + ``plan_listed``: listing, name checks, grouping, digests). Local
figures are with the page cache warm (the files were just made or listed).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import pyarrow.fs as pafs

from benchmarks.common import add_results_option, append_result
from benchmarks.harness.s3 import s3_server_env, start_s3_server
from job.config import JobConfig
from job.input.data_files import list_data_files
from job.input.data_files import list_tree
from job.prepare import plan_listed
from storage import Location, resolve

BUCKET = "listing-bench"


def make_local(root: str, files: int, folders: int) -> str:
    """``files`` empty files in ``folders`` folders under ``root``/<files>; reused when a previous run made them."""
    base = os.path.join(root, str(files))
    done = base + ".made"  # beside the folder, not in it: the listing counts files
    if not os.path.exists(done):
        for index in range(files):
            folder = os.path.join(base, f"day={index % folders:05d}")
            if index < folders:
                os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, f"img-{index:08d}.jpg"), "wb").close()
        open(done, "wb").close()
    return base


def make_s3(objects: int, folders: int) -> None:
    """``objects`` one-byte objects in ``folders`` folders of the moto server's bucket, through its backend."""
    from moto.s3.models import s3_backends

    backend = s3_backends["123456789012"]["global"]
    backend.create_bucket(BUCKET, "us-east-1")
    for index in range(objects):
        backend.put_object(BUCKET, f"photos/day={index % folders:05d}/img-{index:08d}.jpg", b"x")


def best(repeats: int, measure: Callable[[], int]) -> tuple[float, int]:
    """The best seconds of ``repeats`` calls, and what the call counted."""
    times, counted = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        counted = measure()
        times.append(time.perf_counter() - started)
    return min(times), counted


def files_in(infos: list[pafs.FileInfo]) -> int:
    return sum(1 for info in infos if info.type == pafs.FileType.File)


def measure(location: Location, what: str, repeats: int, plan: bool) -> list[dict]:
    fs, root = location.filesystem, location.path
    rows = []
    variants = {"one recursive listing": lambda: files_in(fs.get_file_info(pafs.FileSelector(root, recursive=True))),
                "parallel by common prefix": lambda: files_in(list_tree(fs, root))}
    if plan:
        config = JobConfig(input=location.uri, output=None)
        variants["plan (list + group)"] = lambda: plan_listed(location, config, list_data_files(location)).rows
    for name, call in variants.items():
        seconds, counted = best(repeats, call)
        row = {"where": what, "variant": name, "objects": counted, "seconds": round(seconds, 2),
               "objects_per_s": round(counted / seconds)}
        print(f"{what:>6} {name:<28} {counted:>9,} objects {seconds:8.2f} s  {counted / seconds:>10,.0f}/s")
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-files", type=int, default=1_000_000)
    parser.add_argument("--folders", type=int, default=1_000, help="folders the local files are spread over (common prefixes)")
    parser.add_argument("--s3-objects", type=int, default=20_000)
    parser.add_argument("--s3-folders", type=int, default=100, help="folders the S3 objects are spread over")
    parser.add_argument("--root", default="/tmp/listing_bench", help="where the local files are made (and kept)")
    parser.add_argument("--repeats", type=int, default=2)
    add_results_option(parser)
    args = parser.parse_args()
    rows = []
    if args.local_files:
        started = time.perf_counter()
        local = resolve(make_local(args.root, args.local_files, args.folders))
        print(f"local: {args.local_files:,} files ready in {time.perf_counter() - started:.0f} s")
        rows += measure(local, "local", args.repeats, plan=True)
    if args.s3_objects:
        os.environ.update(s3_server_env())
        server, endpoint = start_s3_server()
        try:
            started = time.perf_counter()
            make_s3(args.s3_objects, args.s3_folders)
            print(f"s3: {args.s3_objects:,} objects ready in {time.perf_counter() - started:.0f} s")
            rows += measure(resolve(f"s3://{BUCKET}/photos", endpoint), "s3", args.repeats, plan=False)
        finally:
            server.stop()
    for row in rows:
        folders = args.folders if row["where"] == "local" else args.s3_folders
        append_result(args.results, {"benchmark": "listing", "folders": folders, **row})


if __name__ == "__main__":
    main()
