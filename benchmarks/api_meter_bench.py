"""The pipeline meter for the Ray API: Ray Data's CPU per image, operator by operator, of a user's pipeline.

    python -m benchmarks.api_meter_bench --images 20480 --repeats 3

A user's ``ray.data.read_parquet -> runners.ray.api.classify -> write_parquet`` on raw 256x256x3 input
(``runners.make_dataset --format raw``, 256 rows a file), with the model swapped for the no-op stand-in of
``benchmarks.standin_model`` in every Ray worker (``--weights random --batch-size 256 --decode cpu``, one
decoder actor), each run in a fresh process and a fresh local Ray. Per run: each operator's "remote cpu
time" from ``Dataset.stats()`` over the images, the measure ``benchmarks.pipeline_bench`` gives for the
command, so the stages ``classify`` adds (``RayPreprocessRows``, ``RayClassifyRows``) compare with the
command's (``RayPreprocess``, which also reads the files, and its predictor). What lies around the
stages (the user's ``read_parquet``, Ray's own processes) is not in it: ``benchmarks.per_image_bench``
counts the whole machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks.common import add_results_option, append_result, environment_with_path
from benchmarks.per_image_bench import make_inputs
from benchmarks.pipeline_bench import cpu_seconds_by_operator

MARK = "operator CPU seconds: "  # the child's answer, among whatever Ray prints
RAY_CPUS = 3  # the two pools and read_parquet's tasks, as benchmarks.standin_run's ray-api way


def one_run(source: str, target: str) -> dict[str, float]:
    """In this process (a child of ``main``): the pipeline once, and each operator's CPU seconds."""
    from benchmarks.standin_model import install, worker_env

    os.environ.update(worker_env(0.0))  # before Ray starts: its workers inherit the stand-in
    install()
    import ray

    from runners.ray.api import classify

    ray.init(num_cpus=RAY_CPUS, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    dataset = classify(ray.data.read_parquet(source), num_cpu_actors=1, weights="random", batch_size=256, decode="cpu")
    dataset.write_parquet(target)
    return cpu_seconds_by_operator(dataset.stats())


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20480)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default="/tmp/per-image-bench", help="inputs, shared with per_image_bench")
    parser.add_argument("--child", nargs=2, metavar=("INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--note", default="")
    add_results_option(parser)
    args = parser.parse_args(argv)
    if args.child:
        print(MARK + json.dumps(one_run(*args.child)))
        return []
    source = make_inputs(args.workdir, [args.images])[args.images]
    env = environment_with_path(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs, load = [], os.getloadavg()[0]
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="api-meter-") as target:
            done = subprocess.run([sys.executable, "-m", "benchmarks.api_meter_bench", "--child", source, f"{target}/out"],
                                  capture_output=True, text=True, env=env, check=True)
        seconds = json.loads(next(line for line in done.stdout.splitlines() if line.startswith(MARK))[len(MARK):])
        runs.append({operator: round(1000 * s / args.images, 3) for operator, s in seconds.items()})
        print(f"CPU ms/image: {runs[-1]}", flush=True)
    medians = {operator: statistics.median(run.get(operator, 0.0) for run in runs) for operator in runs[0]}
    row = append_result(args.results, {"benchmark": "api_meter", "images": args.images, "cpu_ms_per_image": medians,
                                       "runs": runs, "load_1min": load, "note": args.note})
    print(f"median CPU ms/image: {medians}")
    return [row]


if __name__ == "__main__":
    main()
