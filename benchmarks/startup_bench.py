"""Seconds from the command to the first committed part, and to its end, of any job command.

    python -m benchmarks.startup_bench --runs 3 [--vs-checkout DIR] -- python -m runners.ray_job [job options]

Measured from outside the process, by watching the output directory, so it times any
version of the project the same way (a version whose manifest has no timeline too):
``--vs-checkout DIR`` runs the same command from another checkout (e.g. a worktree of an
older commit), alternating with this one run by run, so both see the same machine. Each run
gets a fresh ``--output``. Where the run wrote a manifest with a timeline, its own ``startup_seconds`` (the
first prediction, counted from the interpreter's start) is recorded beside. Appends one JSON row per checkout to
``benchmarks/results/startup.jsonl``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import tempfile
import time

from benchmarks.common import add_results_option, append_result, environment_with_path

POLL_SECONDS = 0.05


def time_run(command: list[str], checkout: str, stop_at_first_part: bool = False) -> tuple[float, float, float | None]:
    """(seconds to the first part-*.parquet under a fresh --output, seconds to exit, the manifest's own
    ``startup_seconds``: the first prediction, None where the run wrote no manifest or a version no timeline) of one run.

    ``stop_at_first_part``: stop the run (SIGTERM, as Ctrl-C would) once its first part is committed,
    for inputs whose whole run is not the point (the first batch of a prefix of a million objects).
    """
    output = tempfile.mkdtemp(prefix="startup-bench-")
    env = environment_with_path(checkout)  # the checkout's code is the one timed
    started, first = time.perf_counter(), None
    process = subprocess.Popen([*command, "--output", output], cwd=checkout, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None:
        if first is None and glob.glob(os.path.join(output, "part-*.parquet")):
            first = time.perf_counter() - started
            if stop_at_first_part:
                process.terminate()
                process.wait()
                return first, time.perf_counter() - started, None
        time.sleep(POLL_SECONDS)
    total = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} in {checkout} exited {process.returncode}; run it alone to see why")
    return (first if first is not None else total), total, _first_prediction(output)


def _first_prediction(output: str) -> float | None:
    try:
        with open(os.path.join(output, "_SUCCESS.json")) as f:
            return json.load(f).get("timeline", {}).get("startup_seconds")
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vs-checkout", help="another checkout to time the same command in, alternating")
    parser.add_argument("--note", default="")
    parser.add_argument("--stop-at-first-part", action="store_true",
                        help="stop each run once its first part is committed (the time to the first batch of a large input)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the job command (without --output)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    checkouts = [os.getcwd(), *([os.path.abspath(args.vs_checkout)] if args.vs_checkout else [])]
    times: dict[str, list[tuple[float, float, float | None]]] = {c: [] for c in checkouts}
    for _ in range(args.runs):
        for checkout in checkouts:
            times[checkout].append(time_run(command, checkout, args.stop_at_first_part))
    rows = []
    for checkout, runs in times.items():
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True).stdout.strip()
        row = {"benchmark": "startup", "command": command, "checkout": commit, "runs": len(runs),
               "first_part_seconds": sorted(round(f, 2) for f, _, _ in runs),
               "first_part_median": round(statistics.median(f for f, _, _ in runs), 2),
               "total_median": round(statistics.median(t for _, t, _ in runs), 2), "note": args.note}
        predicted = [p for _, _, p in runs if p is not None]
        if predicted:
            row |= {"first_prediction_seconds": sorted(predicted), "first_prediction_median": statistics.median(predicted)}
        append_result(args.results, row)
        rows.append(row)
        said = f", first prediction {row['first_prediction_median']} s (runs {row['first_prediction_seconds']})" if predicted else ""
        print(f"{commit}: first part after {row['first_part_median']} s (runs {row['first_part_seconds']}){said}, "
              f"done after {row['total_median']} s (median of {len(runs)})")
    return rows


if __name__ == "__main__":
    main()
