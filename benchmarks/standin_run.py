"""One run of the job, one way, with the stand-in model (``benchmarks.standin_model``) in every process that builds it.

    python -m benchmarks.standin_run ray|ray-api|spark|spark-api|local --input DIR --output DIR [--hold-ms 0]

``local``, ``ray``, ``spark``: the command (``runners.<engine>_job``) as a user runs it, on raw-format
input, ``--weights random --batch-size 256 --decode cpu``. ``ray-api`` and ``spark-api``: the same
input and options through a user's pipeline, ``read_parquet -> runners.<engine>.api.classify ->
write_parquet``. ``benchmarks.per_image_bench`` starts one of these per measured run and counts the
CPU time of its whole process tree, so each run starts its engine afresh, as a user's does.
"""

from __future__ import annotations

import argparse
import os
import sys

from benchmarks.standin_model import install, worker_env

WAYS = ("local", "ray", "ray-api", "spark", "spark-api")
OPTIONS = {"weights": "random", "batch_size": 256, "decode": "cpu"}  # the same model stand-in and batch, every way
COMMAND_OPTIONS = ["--weights", "random", "--batch-size", "256", "--decode", "cpu"]
# One decoder and one predictor on every engine: on 2 cores a second decoder only adds contention.
RAY_DECODERS = 1
# The Spark daemon that installs the stand-in in each Python worker (benchmarks.standin_daemon).
SPARK_SUBMIT_ARGS = "--conf spark.python.daemon.module=benchmarks.standin_daemon pyspark-shell"


def run_command(way: str, source: str, target: str) -> None:
    argv = ["--input", source, "--output", target, *COMMAND_OPTIONS]
    if way == "ray":
        from runners import ray_job

        ray_job.main([*argv, "--num-cpu-actors", str(RAY_DECODERS)])
    elif way == "spark":
        from runners import spark_job

        spark_job.main(argv)
    else:
        from runners import local_job

        local_job.main(argv)


def run_ray_api(source: str, target: str) -> None:
    """A user's Ray script. Ray gets a CPU beyond the two pools: read_parquet's tasks need one
    (``runners.ray.api`` says so when it is missing), and the command's own reading happens in its decoder."""
    import ray

    from runners.ray.api import classify

    ray.init(num_cpus=RAY_DECODERS + 2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    classify(ray.data.read_parquet(source), num_cpu_actors=RAY_DECODERS, **OPTIONS).write_parquet(target)


def run_spark_api(source: str, target: str) -> None:
    """A user's Spark script on the command's default master, Arrow batches of one model batch (as the command tunes its session)."""
    from pyspark.sql import SparkSession

    from runners.spark.api import classify
    from runners.spark.session import DEFAULT_MASTER

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(DEFAULT_MASTER).config("spark.python.daemon.module", "benchmarks.standin_daemon")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(OPTIONS["batch_size"])).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    classify(spark.read.parquet(source), **OPTIONS).write.parquet(target)
    spark.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("way", choices=WAYS)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--hold-ms", type=float, default=0.0, help="stand-in model time per batch of 256 (default: 0, a no-op)")
    args = parser.parse_args(argv)
    # Before Ray or Spark start: their workers inherit this environment.
    os.environ.update(worker_env(args.hold_ms))
    os.environ["PYSPARK_SUBMIT_ARGS"] = SPARK_SUBMIT_ARGS
    install()  # this process: the local engine's model runs here
    if args.way == "ray-api":
        run_ray_api(args.input, args.output)
    elif args.way == "spark-api":
        run_spark_api(args.input, args.output)
    else:
        run_command(args.way, args.input, args.output)


if __name__ == "__main__":
    main()
