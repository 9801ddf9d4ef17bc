"""A rollout's night on a large table costs what it changes: the parts it reads, and the seconds of its plan and check.

    python -m benchmarks.rollout_bench [--files 10000] [--rollout-files 100] [--table-format parquet|delta]

Makes ``--files`` small Parquet files (``benchmarks.plan_bench.make_files``: 4 rows each, images no decoder
takes, so every row is an error row and no time goes to pixels), runs a first night with model A (ResNet50)
and then one rollout night with model B (ResNet18) and ``--rollout-files``, both on the local engine with the
benchmarks' stand-in model (``benchmarks.standin_model``: the pipeline runs, the network does not). The rollout
night is timed whole and by its plan (``job.night.planning.plan_night``) and final check (``job.night.check.verify``),
and the parts it reads are counted: footers read by the plan, parts read whole by the final check. One JSON row.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter

from benchmarks.common import add_results_option, append_result, best_of_fresh_runs
from benchmarks.plan_bench import make_files

A, B = ["--arch", "resnet50"], ["--arch", "resnet18"]


def run_once(folder: str, rollout_files: int, table_format: str) -> dict:
    """The first night and one rollout night on ``folder``, in this process; the rollout night's figures."""
    import job.night.check
    import job.night.finish
    import job.night.held
    import job.steps
    from benchmarks.standin_model import install
    from runners import local_job

    install()
    output = tempfile.mkdtemp(prefix="rollout-bench-")
    argv = ["--input", folder, "--output", output, "--weights", "random", "--decode", "cpu", "--incremental",
            "--table-format", table_format, "--workers", "0"]
    seconds: Counter = Counter()
    reads: Counter = Counter()
    try:
        local_job.main([*argv, *A])
        job.steps.plan_night = _timed(seconds, "plan", job.steps.plan_night)
        job.night.finish.verify = _timed(seconds, "check", job.night.finish.verify)
        job.night.check.read_part_bytes = _counted(reads, "check_parts_read", job.night.check.read_part_bytes)
        job.night.held.read_footers = _counted(reads, "plan_footers_read", job.night.held.read_footers, by=1)
        started = time.perf_counter()
        manifest = local_job.main([*argv, *B, "--rollout-files", str(rollout_files)])
        night = time.perf_counter() - started
    finally:
        shutil.rmtree(output)
    return {"files": manifest["input_files"]["total"], "rows": manifest["counts"]["rows_out"],
            "table_format": table_format, "rollout_files": rollout_files, "rescored": manifest["rollout"]["rescored"],
            "night_seconds": round(night, 2), "plan_seconds": round(seconds["plan"], 3),
            "check_seconds": round(seconds["check"], 3), **{name: reads[name] for name in
                                                             ("plan_footers_read", "check_parts_read")}}


def _timed(seconds: Counter, name: str, call):
    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - began
    return timed


def _counted(reads: Counter, name: str, call, by: int = 0):
    """``call`` counting its reads: one a call, or (``by``: the position of its list of names) one a name."""
    def counted(*args, **kwargs):
        reads[name] += len(args[by]) if by else 1
        return call(*args, **kwargs)
    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rollout-files", type=int, default=100)
    parser.add_argument("--table-format", default="parquet", choices=("parquet", "delta", "iceberg"))
    parser.add_argument("--root", default="/tmp/plan_bench", help="where the input files are made (and kept)")
    parser.add_argument("--repeats", type=int, default=1, help="runs, each in a fresh process; the best is kept")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run on this folder and print the row
    add_results_option(parser)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_once(args.one, args.rollout_files, args.table_format)))
        return
    folder = make_files(args.root, args.files, 4)
    command = [sys.executable, "-m", "benchmarks.rollout_bench", "--one", folder, "--rollout-files",
               str(args.rollout_files), "--table-format", args.table_format]
    row = best_of_fresh_runs(command, args.repeats, "night_seconds")
    print(f"{row['files']:,} files, {row['table_format']}: a rollout night re-scored {row['rescored']} in "
          f"{row['night_seconds']:.2f} s (plan {row['plan_seconds']:.3f} s, {row['plan_footers_read']} footers read; "
          f"final check {row['check_seconds']:.3f} s, {row['check_parts_read']} parts read)")
    append_result(args.results, {"benchmark": "rollout", **row})


if __name__ == "__main__":
    main()
