"""The driver's last step on a first run of many files: the final check, the ids index, the manifest; seconds per file.

    python -m benchmarks.finish_bench [--files 1000,10000,50000] [--rows-per-file 4] [--repeats 1]

Runs ``runners.local_job`` (the stand-in model, ``benchmarks.standin_model``) on ``--files`` small
Parquet files of ``benchmarks.plan_bench`` (made under ``--root``, kept and reused), whose images
are a few bytes no decoder takes: every row is an error row, so the engine's time is the per-file
cost alone and the parts are as many as the files. Each run is a fresh process and a fresh output,
deleted after it.
``job.driver.finish_job`` is timed whole and by its steps, as it calls them: ``verify`` (the final
check: every part the run wrote read back, held to its input's rows and ids, ids unique), the ids
index's new segment (``IdIndex.extended``), the table commit (``commit_run``; nothing without
``--table-format``), the manifest and its history copy, and the tidying after; and the process's resident
memory when ``finish_job`` starts and at most while it runs (sampled every 50 ms), beside the whole run's peak.
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from benchmarks.common import add_results_option, append_result, best_of_fresh_runs
from benchmarks.plan_bench import make_files

STEPS = ("verify", "index", "commit", "manifest", "history", "tidy")


def timed(seconds: dict[str, float], step: str, function: Callable) -> Callable:
    """``function``, adding the seconds of each call to ``seconds[step]``."""

    @functools.wraps(function)
    def call(*args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[step] = seconds.get(step, 0.0) + time.perf_counter() - started

    return call


class PeakMemory:
    """``with PeakMemory() as peak:`` this process's resident set sampled every 50 ms: ``peak.before``, ``peak.highest`` (MB)."""

    def __init__(self) -> None:
        import psutil

        self.process, self.before, self.highest = psutil.Process(), 0.0, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-memory", daemon=True)

    def _megabytes(self) -> float:
        return self.process.memory_info().rss / 2**20

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self.highest = max(self.highest, self._megabytes())

    def __enter__(self) -> PeakMemory:
        self.before = self.highest = self._megabytes()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.highest = max(self.highest, self._megabytes())


def run_once(folder: str) -> dict:
    """One local run on ``folder`` in this process, with ``finish_job`` and its steps timed."""
    import job.driver
    import job.night.finish
    from benchmarks.standin_model import install
    from job.ids.index import IdIndex
    from runners import local_job

    install()
    seconds: dict[str, float] = {}
    memory: list[PeakMemory] = []

    def finish_measured(*args: object, **kwargs: object) -> object:
        with PeakMemory() as peak:
            memory.append(peak)
            return job.night.finish.finish_job(*args, **kwargs)

    job.driver.finish_job = timed(seconds, "finish", finish_measured)
    for step, name in (("verify", "verify"), ("commit", "commit_run"), ("manifest", "write_manifest"),
                       ("history", "copy_manifest"), ("tidy", "_tidy")):
        setattr(job.night.finish, name, timed(seconds, step, getattr(job.night.finish, name)))
    IdIndex.extended = timed(seconds, "index", IdIndex.extended)
    output = tempfile.mkdtemp(prefix="finish-bench-")
    started = time.perf_counter()
    try:
        manifest = local_job.main(["--input", folder, "--output", output, "--weights", "random", "--decode", "cpu"])
    finally:
        shutil.rmtree(output)  # as many parts as files: a million-file run would leave a million behind
    files = manifest["input_files"]["total"]
    return {"files": files, "rows": manifest["counts"]["rows_out"], "command_seconds": round(time.perf_counter() - started, 2),
            "finish_seconds": round(seconds["finish"], 3), "finish_ms_per_file": round(1000 * seconds["finish"] / files, 3),
            "steps_seconds": {step: round(seconds.get(step, 0.0), 3) for step in STEPS},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "finish_rss_mb": {"before": round(memory[0].before), "peak": round(memory[0].highest)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1000,10000,50000", help="comma-separated file counts")
    parser.add_argument("--rows-per-file", type=int, default=4)
    parser.add_argument("--root", default="/tmp/plan_bench", help="where the input files are made (and kept)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each size, each in a fresh process; the best is kept")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run on this folder and print the row
    add_results_option(parser)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_once(args.one)))
        return
    for files in (int(n) for n in args.files.split(",")):
        folder = make_files(args.root, files, args.rows_per_file)
        command = [sys.executable, "-m", "benchmarks.finish_bench", "--one", folder]
        row = best_of_fresh_runs(command, args.repeats, "finish_seconds") | {"rows_per_file": args.rows_per_file}
        steps = ", ".join(f"{step} {s:.2f}" for step, s in row["steps_seconds"].items())
        memory = row["finish_rss_mb"]
        print(f"{row['files']:>9,} files: finish {row['finish_seconds']:.2f} s = {row['finish_ms_per_file']:.3f} ms a file "
              f"({steps}), resident {memory['before']} MB before it, {memory['peak']} MB at most during it; "
              f"whole command {row['command_seconds']:.1f} s, peak {row['peak_rss_mb']} MB, load {row['load_average']}")
        append_result(args.results, {"benchmark": "finish", **row})


if __name__ == "__main__":
    main()
