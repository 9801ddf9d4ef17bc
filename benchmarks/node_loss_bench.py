"""The time a night loses to one lost Ray node: the same job with no loss, and with a worker node killed mid-run.

    python -m benchmarks.node_loss_bench --repeat 2 [--results FILE.jsonl] [job options...]
    python -m benchmarks.node_loss_bench --lose none predictor --replace

Each run starts a fresh real multi-node Ray on this machine (``benchmarks.harness.ray_cluster``: a
head that runs no work and two worker nodes of 2 CPUs each), so one actor pool cannot sit on one
node. The job is ``python -m runners.ray_job --address <head>`` on a synthetic dataset
(``runners.make_dataset``), as a user runs it: one predictor (ResNet50, random weights, on CPU)
and two decoders, which spread over both workers. ``--lose`` names the cases, in order, per repetition:

- ``none``: nothing lost, the baseline;
- ``decoders``: the worker node that holds no predictor, killed whole (its ``ray start``, raylet,
  object store and every actor, SIGKILL by pid) once ``--kill-at`` of the input files' parts are committed;
- ``predictor``: the node holding the predictor (and a decoder), killed the same way.

No node replaces the lost one unless ``--replace`` (an autoscaler's replacement takes minutes on a
cloud; here the night goes on with what is left). Each run gives one row: the command's wall
seconds, the seconds lost against the same repetition's baseline, when the kill came, the
manifest's ``settings.recovery`` (nodes and actors lost, rows received twice), and rows in, out,
lost and duplicated, read back from the parts the manifest lists. Extra arguments go to the job
after the defaults (``JOB_DEFAULTS``), so they override them. Needs the dev extra (psutil).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import add_results_option, append_result, output_ids
from benchmarks.harness.ray_cluster import LocalCluster, Node
from runners import make_dataset

CASES = ("none", "decoders", "predictor")
WORKER_CPUS = 2  # per worker node: a predictor and two decoders need both workers
PREDICTOR, DECODER = "MapBatches(RayClassify)", "MapBatches(RayPreprocess)"  # the actors' process titles
# A tiny model input and batch, large JPEGs: decoding (about 20 ms an image) and the ResNet50 predictor
# on one CPU thread both work for most of the run, so a kill finds both stages busy; 960 images take
# about 50 s on the 2-core machine, long enough for a kill to land mid-run.
JOB_DEFAULTS = ["--weights", "random", "--num-cpu-actors", "2", "--batch-size", "8", "--resize", "40", "--crop", "32"]
JOB_TIMEOUT_S = 900  # one run, start-up and recovery included, on a loaded 2-core machine


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--images", type=int, default=960)
    parser.add_argument("--rows-per-file", type=int, default=8, help="rows per input Parquet file: a file is a unit of work")
    parser.add_argument("--size", default="1500x1125", help="WxH of the synthetic JPEGs (runners.make_dataset)")
    parser.add_argument("--lose", nargs="+", choices=CASES, default=list(CASES), help="the cases each repetition runs")
    parser.add_argument("--kill-at", type=float, default=0.33, help="share of the parts committed when the node is killed")
    parser.add_argument("--replace", action="store_true", help="a new worker node joins as soon as one is lost")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of the cases")
    parser.add_argument("--note", default="", help="free text recorded with each row (e.g. 'machine shared')")
    return parser


def main(argv: list[str] | None = None) -> list[dict]:
    args, job_args = get_args_parser().parse_known_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="node-loss-bench-"))
    make_dataset.main(["--output", str(workdir / "in"), "--images", str(args.images), "--rows-per-file",
                       str(args.rows_per_file), "--size", args.size])
    rows = []
    for repetition in range(args.repeat):
        baseline = None
        for case in args.lose:
            out = workdir / f"out-{repetition}-{case}"
            row = run_case(args, [*JOB_DEFAULTS, *job_args], case, workdir / "in", out, repetition)
            baseline = row["wall_seconds"] if case == "none" and row["error"] is None else baseline
            row["baseline_seconds"] = baseline
            row["seconds_lost"] = None if baseline is None or row["error"] else round(row["wall_seconds"] - baseline, 2)
            rows.append(append_result(args.results, row))
            print(summary(row), flush=True)
    return rows


def run_case(args: argparse.Namespace, job_args: list[str], case: str, data: Path, out: Path, repetition: int) -> dict:
    """One run on a fresh cluster: the job, the kill ``case`` asks for, what came back."""
    files = math.ceil(args.images / args.rows_per_file)
    with LocalCluster(head_cpus=0) as cluster:
        for _ in range(2):
            cluster.add_node(WORKER_CPUS)
        load = os.getloadavg()[0]
        began = time.monotonic()
        job = start_job(cluster, job_args, data, out)
        kill = {} if case == "none" else lose_node(cluster, job, case, out, math.ceil(args.kill_at * files), began, args.replace)
        stderr = finish(job, began)
    wall = time.monotonic() - began
    error = kill.get("error") or (None if job.returncode == 0 else f"exit {job.returncode}: {stderr.strip()[-800:]}")
    return {"benchmark": "node_loss", "lose": case, "repetition": repetition, "images": args.images,
            "rows_per_file": args.rows_per_file, "files": files, "replace": args.replace,
            "wall_seconds": round(wall, 2), **{k: v for k, v in kill.items() if k != "error"},
            **outcome(out, args.images, error), "error": error,
            "load_average_1m": round(load, 2),  # the machine is shared: context for the seconds
            "job_args": job_args, "note": args.note}


def start_job(cluster: LocalCluster, job_args: list[str], data: Path, out: Path) -> subprocess.Popen:
    env = {key: value for key, value in cluster.env.items() if key != "RAY_ADDRESS"}
    argv = [sys.executable, "-m", "runners.ray_job", "--address", cluster.address, "--input", str(data),
            "--output", str(out), *job_args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def lose_node(cluster: LocalCluster, job: subprocess.Popen, case: str, out: Path, parts: int, began: float,
              replace: bool) -> dict:
    """Kill the worker node ``case`` names once ``parts`` parts are committed; when, and what it held."""
    while len(list(out.glob("part-*.parquet"))) < parts:
        if job.poll() is not None:
            return {"error": f"the job ended before {parts} parts were committed: nothing was killed"}
        time.sleep(0.2)
    committed = len(list(out.glob("part-*.parquet")))
    workers = cluster.nodes[1:]
    with_predictor = [node for node in workers if node.runs(PREDICTOR)]
    if len(with_predictor) != 1:
        return {"error": f"the predictor ran on {len(with_predictor)} worker nodes, not 1: nothing was killed"}
    victim = with_predictor[0] if case == "predictor" else next(node for node in workers if node not in with_predictor)
    held = held_actors(victim)
    victim.kill()
    if replace:
        cluster.add_node(WORKER_CPUS, wait=False)
    return {"killed_at_seconds": round(time.monotonic() - began, 2), "parts_at_kill": committed, "killed_node_held": held}


def held_actors(node: Node) -> dict[str, int]:
    """The stage actors on ``node`` just before it goes: predictors and decoders."""
    return {"predictors": int(node.runs(PREDICTOR)), "decoders": int(node.runs(DECODER))}


def finish(job: subprocess.Popen, began: float) -> str:
    """The job's stderr once it ended (killed past ``JOB_TIMEOUT_S``: a hung recovery is a result too)."""
    try:
        return job.communicate(timeout=max(1.0, JOB_TIMEOUT_S - (time.monotonic() - began)))[1]
    except subprocess.TimeoutExpired:
        job.kill()
        return job.communicate()[1] + f"\nkilled after {JOB_TIMEOUT_S} s"


def outcome(out: Path, images: int, error: str | None) -> dict:
    """Rows in, out, lost and duplicated, and the manifest's recovery and job seconds (none without a manifest)."""
    if error is not None:
        return {"rows_in": images, "rows_out": None, "rows_lost": None, "duplicates": None, "recovery": None}
    got = Counter(output_ids(str(out)))
    manifest = json.loads((out / "_SUCCESS.json").read_text())
    expected = {f"img-{i:08d}" for i in range(images)}  # runners.make_dataset's ids
    return {"rows_in": images, "rows_out": sum(got.values()), "rows_lost": len(expected - set(got)),
            "duplicates": sum(n - 1 for n in got.values() if n > 1), "recovery": manifest["settings"]["recovery"],
            "job_seconds": manifest["seconds"]}


def summary(row: dict) -> str:
    if row["error"]:
        return f"lose {row['lose']}: error: {row['error']}"
    lost = "" if row["seconds_lost"] is None else f" ({row['seconds_lost']:+.1f} s against no loss)"
    kill = (f", killed at {row['killed_at_seconds']:.1f} s after {row['parts_at_kill']} parts, holding {row['killed_node_held']}"
            if row["lose"] != "none" else "")
    return (f"lose {row['lose']}: {row['wall_seconds']:.1f} s{lost}{kill}; {row['rows_out']} of {row['rows_in']} rows, "
            f"{row['rows_lost']} lost, {row['duplicates']} duplicated; recovery {row['recovery']}")


if __name__ == "__main__":
    main()
