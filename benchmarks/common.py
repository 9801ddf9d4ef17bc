"""What every benchmark row carries (when, where: hardware, with what: versions, how: config), and where it goes.

A row is kept only where the user asks (``--results FILE.jsonl``): following the docs must not
dirty a checkout. BENCHMARKS.md's figures were kept with ``--results benchmarks/results/<name>.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import pyarrow.parquet as pq

from job.night.manifest import read_manifest
from job.report import hardware, versions
from storage import resolve


def add_results_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", metavar="FILE.jsonl",
                        help="append each result row to FILE as one JSON line (default: print the figures only)")


def append_result(path: str | None, row: dict) -> dict:
    """``row`` with its time, hardware and versions; appended to ``path`` as one JSON line when given."""
    row = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **row}
    row.setdefault("hardware", hardware())
    row.setdefault("versions", versions())
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
    return row


def best_of_fresh_runs(command: list[str], repeats: int, key: str) -> dict:
    """``command`` run ``repeats`` times, each a fresh process whose last line of output is one JSON row: the row
    with the least ``key``, with every run's ``key`` (``runs_<key>``) and the load average beside it."""
    runs = [json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            for _ in range(repeats)]
    best = min(runs, key=lambda run: run[key])
    return best | {f"runs_{key}": [run[key] for run in runs], "load_average": round(os.getloadavg()[0], 1)}


def output_ids(uri: str, endpoint: str | None = None) -> list[str]:
    """Every id of a finished output, as a reader sees it: the parts its manifest lists."""
    location = resolve(uri, endpoint)
    files = [location.join(name) for name in read_manifest(location).files]
    return pq.read_table(files, columns=["id"], filesystem=location.filesystem).column("id").to_pylist()


def environment_with_path(first: str) -> dict[str, str]:
    """This process's environment with ``first`` at the front of PYTHONPATH, what was there kept after it.

    A child started with it imports the code under ``first`` (a checkout being timed, or ``benchmarks/``,
    which no install carries) and still finds what PYTHONPATH held (an offline bundle of packages).
    """
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (first, os.environ.get("PYTHONPATH")) if p)}
