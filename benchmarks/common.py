"""What every benchmark row carries: when, where (hardware), with what (versions), how (config)."""

from __future__ import annotations

import json
import os
import time

from job.report import hardware, versions

RESULTS_DIR = os.path.join(os.path.dirname(__file__), "results")


def append_result(name: str, row: dict) -> str:
    """Append one JSON row to benchmarks/results/<name>.jsonl; returns the path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    row = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **row}
    row.setdefault("hardware", hardware())
    row.setdefault("versions", versions())
    path = os.path.join(RESULTS_DIR, f"{name}.jsonl")
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    return path
