"""The floor under the Ray job's start-up: Ray's own start, one Ray Data actor, torch, the model, one forward.

    python -m benchmarks.ray_floor_bench --runs 5 [--batch 32] [--results FILE.jsonl]

Each run is a fresh interpreter that does only what no Ray job can skip: ``ray.init`` as the job
starts its local Ray (no dashboard, quiet), a Ray Data pipeline of one actor pool of one actor
(``map_batches``, ``ActorPoolStrategy(size=1)``, one CPU), whose constructor imports torch and builds
the job's model (``inference.load_model("random")``, threads as ``runners.ray.stages.RayClassify``
sets them on CPU) and whose one call runs a forward of ``--batch`` zero images at 224x224. No input
is planned or read, nothing is decoded or written, none of the job's helper actors is started.

What it prints: the time from the interpreter's start to the forward's end (the job's
``startup_seconds`` counts the same way: from its first import to its first model batch done), and
where it went (``ray.init``; the actor's process start; its constructor's start; torch imported;
the model built; the forward). Compare it with ``python -m benchmarks.startup_bench -- python -m
runners.ray_job``: the difference is what the job itself adds to its start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

STARTED_AT = time.time()  # the child's clock starts at its first import, as the job's does

from benchmarks.common import add_results_option, append_result, environment_with_path  # noqa: E402

MARKS = ("ray_init_done", "actor_process_started", "constructor_started", "torch_imported", "model_built",
         "forward_started", "forward_done")


class FloorModel:
    """The predictor's irreducible part: torch, the model, a forward; each moment stamped (``time.time()``)."""

    def __init__(self) -> None:
        import psutil

        self.marks = {"actor_process_started": psutil.Process().create_time(), "constructor_started": time.time()}
        import torch

        self.marks["torch_imported"] = time.time()
        from inference import load_model

        torch.set_num_threads(os.cpu_count() or 1)  # as RayClassify on CPU: Ray pins actors to one thread
        self.module = load_model("random").module
        self.marks["model_built"] = time.time()

    def __call__(self, batch: dict) -> dict:
        import numpy as np
        import torch

        rows = len(batch["id"])
        started = time.time()
        with torch.inference_mode():
            self.module(torch.zeros(rows, 3, 224, 224))
        marks = {**self.marks, "forward_started": started, "forward_done": time.time()}
        return {"id": batch["id"], "marks": np.array([json.dumps(marks)] * rows)}


def child(batch: int) -> dict:
    """One run, in this fresh process: seconds from its start to each of ``MARKS``."""
    import ray

    ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    marks = {"ray_init_done": time.time()}
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    dataset = ray.data.from_items([{"id": i} for i in range(batch)]).map_batches(
        FloorModel, batch_size=batch, compute=ray.data.ActorPoolStrategy(size=1), num_cpus=1)
    first = next(iter(dataset.iter_batches(batch_size=None)))
    marks |= json.loads(first["marks"][0])
    ray.shutdown()
    return {mark: round(marks[mark] - STARTED_AT, 3) for mark in MARKS}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="images in the one forward (the job's batch on CPU: 32)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one run, in a fresh process
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.batch)))
        return {}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = []
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, "-m", "benchmarks.ray_floor_bench", "--child", "--batch", str(args.batch)],
                              cwd=root, env=environment_with_path(root), capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {mark: round(statistics.median(run[mark] for run in runs), 2) for mark in MARKS}
    row = append_result(args.results, {"benchmark": "ray_floor", "runs": len(runs), "batch": args.batch,
                                       "median_seconds": medians, "forward_done_seconds": sorted(r["forward_done"] for r in runs)})
    print(f"first forward done after {medians['forward_done']} s (runs {row['forward_done_seconds']}), median of {len(runs)}:")
    for mark in MARKS:
        print(f"  {mark:22s} {medians[mark]:6.2f} s")
    return row


if __name__ == "__main__":
    main()
