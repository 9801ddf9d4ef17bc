"""A job run with S3 failing under it: how many faults, how many rows lost (none), how long.

    python -m benchmarks.fault_bench --engine ray --images 64 --fault-rate 0.1
    python -m benchmarks.fault_bench --engine spark --fault-rate 0.1 --kill worker --master 'local[2,4]'

Starts moto's S3 server on 127.0.0.1, writes a synthetic dataset to it
(``runners.make_dataset``), and runs ``runners.<engine>_job`` with input and output through
``benchmarks/harness/fault_proxy.py``, which answers ``--fault-rate`` of the requests with 503
SlowDown or drops the connection. ``--kill`` also SIGKILLs one worker process mid-run (a Ray
actor, or a Spark Python worker: give Spark task retries with ``--master 'local[N,F]'``).
Then it reads the output back and makes one JSON row (``--results FILE`` keeps it): requests and faults by kind, rows in, out, lost
and duplicated, seconds, the machine's load, hardware and versions. Extra arguments go to
the job. Needs the dev extra (moto, psutil).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections import Counter

import boto3

from benchmarks.common import add_results_option, append_result, output_ids
from benchmarks.harness.fault_proxy import FAULT_KINDS, FaultProxy
from benchmarks.harness.processes import KillFirst, busy_pyspark_worker, ray_actor_working, ray_data_actor
from benchmarks.harness.s3 import s3_server_env, start_s3_server
from job import driver
from job.engine import Engine
from runners import engine, make_dataset

KILLS = {"preprocess": ray_actor_working("RayPreprocess"), "classify": ray_actor_working("RayClassify"),
         "worker": busy_pyspark_worker(cpu_s=1.0)}
BUCKET = "fault-bench"


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--engine", default="ray", choices=("ray", "spark"), help="the engine whose job runs (runners.ENGINES)")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--rows-per-file", type=int, default=8, help="input Parquet files hold this many rows")
    parser.add_argument("--fault-rate", type=float, default=0.1, help="share of S3 requests that fail (0-1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault schedule")
    parser.add_argument("--kill", choices=sorted(KILLS), help="also SIGKILL one worker mid-run: preprocess/classify (Ray actors), worker (Spark)")
    parser.add_argument("--note", default="", help="free text recorded with the row (e.g. 'machine shared')")
    return parser


def main(argv: list[str] | None = None) -> dict:
    args, job_args = get_args_parser().parse_known_args(argv)
    os.environ.update(s3_server_env())  # fake credentials, before Ray or Spark start workers
    server, endpoint = start_s3_server()
    try:
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        ids = write_input(endpoint, args)
        with FaultProxy(endpoint, fault_rate=args.fault_rate, seed=args.seed) as proxy:
            row = run_job(args, job_args, proxy, endpoint, ids)
    finally:
        server.stop()
    append_result(args.results, row)
    outcome = row["error"] or f"{row['rows_out']} of {row['rows_in']} rows, {row['rows_lost']} lost, {row['duplicates']} duplicated"
    print(f"{args.engine}: {outcome}; {row['faults_injected']} faults in {row['requests']} requests {row['faults']}; "
          f"killed: {row['killed'] or 'none'}; redone: {row['redone']}; {row['seconds']:.1f} s")
    return row


def write_input(endpoint: str, args: argparse.Namespace) -> list[str]:
    make_dataset.main(["--output", f"s3://{BUCKET}/in/", "--images", str(args.images), "--rows-per-file",
                       str(args.rows_per_file), "--s3-endpoint-url", endpoint])
    return [f"img-{i:08d}" for i in range(args.images)]


def run_job(args: argparse.Namespace, job_args: list[str], proxy: FaultProxy, endpoint: str, ids: list[str]) -> dict:
    argv = ["--input", f"s3://{BUCKET}/in/", "--output", f"s3://{BUCKET}/out/", "--s3-endpoint-url", proxy.url,
            "--weights", "random", "--overwrite", *job_args]
    load, started = os.getloadavg()[0], time.perf_counter()
    manifest, error, killed = run_once(engine(args.engine), argv, args.kill)
    seconds = time.perf_counter() - started
    # A failed job commits nothing (no manifest): no rows to count, and none lost from an output.
    got = Counter(output_ids(f"s3://{BUCKET}/out/", endpoint)) if error is None else None
    return {
        "benchmark": "reliability",
        "engine": args.engine,
        "images": args.images,
        "rows_per_file": args.rows_per_file,
        "fault_rate": args.fault_rate,
        "seed": args.seed,
        "requests": proxy.counts["requests"],
        "faults": {k: proxy.counts[k] for k in FAULT_KINDS},
        "faults_injected": proxy.faults(),
        "killed": killed,
        "rows_in": len(ids),
        "rows_out": None if got is None else sum(got.values()),
        "rows_lost": None if got is None else len(set(ids) - set(got)),
        "duplicates": None if got is None else sum(n - 1 for n in got.values() if n > 1),
        "error": error,
        "redone": redone(manifest),
        "seconds": round(seconds, 2),  # the whole job: planning, retries' backoff, commit
        "load_average_1m": round(load, 2),  # the machine is shared: context for the seconds
        "job_args": job_args,
        "note": args.note,
    }


def run_once(job: Engine, argv: list[str], kill: str | None) -> tuple[dict, str | None, str | None]:
    """Run the job, killing one worker mid-run if asked; returns (manifest, error, killed process)."""
    killer = KillFirst(KILLS[kill], spare=ray_data_actor) if kill else None
    try:
        with killer or contextlib.nullcontext():
            manifest = driver.main(job, argv)
    except Exception as e:  # noqa: BLE001 - a failed run is a result too: recorded, not raised
        return {}, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", None
    return manifest, None, killer.killed[0] if killer and killer.killed else None


def redone(manifest: dict) -> dict:
    """What the engine redid: Spark's retried partitions, Ray's actor constructions per stage."""
    if "spark" in manifest:
        return {"retried_partitions": manifest["settings"]["spark"]["retried_partitions"]}
    return {"actors_started": {stage: sum(p["actors"] for p in nodes) for stage, nodes in manifest.get("placement", {}).items()}}


if __name__ == "__main__":
    main()
