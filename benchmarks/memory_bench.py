"""Peak memory of a whole job (driver, engine daemons, workers) at N and 4N images: it should stay flat.

    python -m benchmarks.memory_bench --engine ray --images 128 [--rows-per-file 64] [job options...]

For N and 4N images it writes a synthetic dataset (``runners.make_dataset``), runs
``python -m runners.<engine>_job --weights random`` as a subprocess in its own session, and
samples every process of that session from /proc (Linux) until it exits: the peak of the
summed RSS, the peak of the summed PSS (shared pages, such as Ray's object store, counted
once instead of once per process that maps them), and the driver's own peak RSS. One JSON
row per run goes to ``benchmarks/results/memory.jsonl`` with the job's manifest figures,
config, hardware and versions. Streaming means the 4N run's peaks match the N run's: more
files, not bigger batches. Extra arguments go to the job unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from benchmarks.common import add_results_option, append_result
from runners import ENGINES, make_dataset

SAMPLE_INTERVAL_S = 0.25  # fine enough to catch a model load or a block burst; cheap on /proc
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Peaks:
    tree_rss_kib: int = 0
    tree_pss_kib: int = 0
    driver_rss_kib: int = 0
    processes: int = 0  # most processes alive at once in the job's session
    samples: int = 0
    names: set[str] = field(default_factory=set)


def session_pids(sid: int) -> list[int]:
    """The processes of session ``sid`` (the job and everything it started, reparented or not)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
            except OSError:
                continue  # exited while we looked
            if int(fields[3]) == sid:  # field 6 of stat: session id
                pids.append(int(entry))
    return pids


def rss_pss_kib(pid: int) -> tuple[int, int]:
    """RSS and PSS of one process in KiB; (0, 0) if it has exited."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE_KIB
        with open(f"/proc/{pid}/smaps_rollup") as f:
            pss = next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0, 0
    return rss, pss


def watch(job: subprocess.Popen) -> Peaks:
    """Sample the job's session until the job exits."""
    peaks = Peaks()
    while job.poll() is None:
        pids = session_pids(job.pid)
        sizes = [rss_pss_kib(pid) for pid in pids]
        peaks.tree_rss_kib = max(peaks.tree_rss_kib, sum(r for r, _ in sizes))
        peaks.tree_pss_kib = max(peaks.tree_pss_kib, sum(p for _, p in sizes))
        peaks.driver_rss_kib = max(peaks.driver_rss_kib, rss_pss_kib(job.pid)[0])
        peaks.processes, peaks.samples = max(peaks.processes, len(pids)), peaks.samples + 1
        time.sleep(SAMPLE_INTERVAL_S)
    return peaks


def run_once(engine: str, images: int, rows_per_file: int, job_args: list[str], workdir: str) -> dict:
    data, out = f"{workdir}/in-{images}", f"{workdir}/out-{images}"
    make_dataset.main(["--output", data, "--images", str(images), "--rows-per-file", str(rows_per_file)])
    command = [sys.executable, "-m", ENGINES[engine].module, "--input", data, "--output", out, "--weights", "random", *job_args]
    started = time.perf_counter()
    with open(f"{workdir}/job-{images}.log", "w") as log:
        job = subprocess.Popen(command, start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
        peaks = watch(job)
    if job.returncode != 0:
        raise SystemExit(f"{engine} job failed (exit {job.returncode}); see {workdir}/job-{images}.log")
    with open(f"{out}/_SUCCESS.json") as f:
        manifest = json.load(f)
    mib = lambda kib: round(kib / 1024, 1)  # noqa: E731 - a unit, not logic
    return {
        "benchmark": "memory", "engine": engine, "images": manifest["counts"]["rows_out"],
        "input_files": manifest["input_files"]["total"], "rows_per_file": rows_per_file,
        "peak_tree_rss_mib": mib(peaks.tree_rss_kib), "peak_tree_pss_mib": mib(peaks.tree_pss_kib),
        "peak_driver_rss_mib": mib(peaks.driver_rss_kib), "max_processes": peaks.processes, "samples": peaks.samples,
        "sample_interval_s": SAMPLE_INTERVAL_S, "wall_seconds": round(time.perf_counter() - started, 1),
        "job_seconds": manifest["seconds"], "images_per_sec": manifest["images_per_sec"], "job_args": job_args,
        "config": manifest["config"], "hardware": manifest["hardware"], "versions": manifest["versions"],
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--engine", default="ray", choices=("ray", "spark"), help="the engine whose job runs (runners.ENGINES)")
    parser.add_argument("--images", type=int, default=128, help="N: runs N and 4N images (default: 128)")
    parser.add_argument("--rows-per-file", type=int, default=64, help="rows per input file (default: 64)")
    parser.add_argument("--note", default="", help="free text recorded with each row (e.g. 'machine shared')")
    args, job_args = parser.parse_known_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as workdir:
        for images in (args.images, 4 * args.images):
            row = {**run_once(args.engine, images, args.rows_per_file, job_args, workdir), "note": args.note}
            append_result(args.results, row)
            rows.append(row)
            print(f"{args.engine}: {row['images']} images in {row['input_files']} files: peak RSS {row['peak_tree_rss_mib']} MiB "
                  f"(PSS {row['peak_tree_pss_mib']} MiB, driver {row['peak_driver_rss_mib']} MiB), {row['wall_seconds']} s")
    small, large = rows
    print(f"{args.engine}: 4x the images -> peak PSS x{large['peak_tree_pss_mib'] / small['peak_tree_pss_mib']:.2f}, "
          f"driver RSS x{large['peak_driver_rss_mib'] / small['peak_driver_rss_mib']:.2f}")
    return rows


if __name__ == "__main__":
    main()
