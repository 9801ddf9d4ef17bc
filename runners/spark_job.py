"""python -m runners.spark_job: batch inference on Spark with Arrow/pandas UDFs.

    python -m runners.spark_job --input s3://bucket/images/ --output s3://bucket/preds/

The driver plans the input files and builds a DataFrame of their indices, one row per file,
spread over ``--partitions`` tasks. Executors read Parquet through pyarrow (no hadoop-aws
jars, so S3 works on any Spark), preprocess, classify and commit one part per input file
(written whole, then made visible; a retried attempt rewrites the same part); the shared
driver then verifies every part and writes the manifest. With an active SparkSession
(Databricks, a notebook) the job uses it; otherwise it starts one on ``--master``, by
default ``local[*,4]``: plain ``local[*]`` never retries a failed task
(``spark.task.maxFailures`` is 1 in local mode), so a killed Python worker would fail the
job; ``local[N,F]`` allows F attempts, and 4 is the cluster default.

``--udf iterator`` (default) is one ``mapInArrow`` stage: read -> preprocess -> classify ->
write, with the model cached per Python worker (Spark reuses workers), optionally reading
ahead in a thread (``--prefetch``). We chose ``mapInArrow`` over an iterator-of-Series
``pandas_udf`` or ``predict_batch_udf`` because it loads the model once as they do, but also
keeps Arrow end to end (no pandas round trip of 150 KB pixel cells), needs no intermediate
pixel column in the JVM, and lets the task write its own output, which S3 without s3a needs.
``--udf series`` runs the reference benchmark's Series pandas UDF, which builds the model on
every Arrow batch: it is there to measure that cost, not to use.

GPUs: give each task one GPU and the job uses the address Spark assigned it, e.g.
``--conf spark.executor.resource.gpu.amount=1 --conf spark.task.resource.gpu.amount=1
--conf spark.executor.resource.gpu.discoveryScript=/opt/getGpusResources.sh``
(Databricks GPU clusters set these). Without them the model runs on CPU. See docs/SPARK.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence

from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import StructType

from runners.driver import PreparedJob, finish_job, prepare_job
from runners.job import JobError, config_from_args, get_args_parser, run_main
from runners.parts import FILE, ROW
from runners.report import print_summary
from runners.spark_udfs import (
    PIXELS_DDL,
    PREDICTION_FIELDS,
    STATS_DDL,
    ReadAndClassify,
    ReadAndPreprocess,
    TaskSpec,
    WriteParts,
    series_predict,
)
from runners.stages import default_batch_size
from storage import StorageError

# Local mode with 4 attempts per task, as spark.task.maxFailures on a cluster: a task whose
# Python worker died is retried (plain local[*] allows one attempt).
DEFAULT_MASTER = "local[*,4]"
# The last line of a Python traceback raised by our storage layer in a worker.
_WORKER_STORAGE_ERROR = re.compile(r"^(?:[\w.]+\.)?StorageError: (.+)$", re.MULTILINE)
# One batch read ahead overlaps decode with the model (the benchmark's best Spark variant);
# deeper queues only hold more memory once decode keeps up.
DEFAULT_PREFETCH = 1
FILE_SCHEMA = f"{FILE} int"


def get_spark_args_parser() -> argparse.ArgumentParser:
    parser = get_args_parser(prog="python -m runners.spark_job", description=__doc__.splitlines()[0])
    group = parser.add_argument_group("spark")
    group.add_argument("--master", help=f"Spark master, e.g. spark://host:7077 (default: the active SparkSession, else {DEFAULT_MASTER})")
    group.add_argument("--udf", choices=("iterator", "series"), default="iterator",
                       help="iterator: mapInArrow, model loaded once per Python worker (default); "
                            "series: the reference benchmark's Series pandas UDF, model rebuilt every batch (for comparison)")
    group.add_argument("--prefetch", type=_count(0), default=DEFAULT_PREFETCH,
                       help=f"batches read and decoded ahead in a thread while the model runs; 0: none (default: {DEFAULT_PREFETCH})")
    group.add_argument("--partitions", type=_count(1), help="Spark tasks (default: one per input file)")
    return parser


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from e
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text}")
        return value

    return parse


def get_session(master: str | None, batch_size: int) -> tuple[SparkSession, bool]:
    """The active session (Databricks, notebooks, tests), else a new one; and whether we own it."""
    active = SparkSession.getActiveSession()
    if active is not None:
        if master is not None and master != active.sparkContext.master:
            raise JobError(f"--master {master}: a SparkSession on {active.sparkContext.master} is already active; drop --master to use it")
        return active, False
    master = master or DEFAULT_MASTER
    builder = SparkSession.builder
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local workers must run this interpreter (its venv has torch), not the first python3 on PATH.
        # pyspark reads PYSPARK_PYTHON (not the spark.pyspark.python conf) when it starts the JVM.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        builder.master(master)
        .appName("streaming-batch-inference")
        # Arrow batches of one model batch: the Series UDF then sees what the benchmark saw.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_size))
        .getOrCreate()
    )
    # Progress and the summary, not the JVM's INFO wall.
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def files_frame(spark: SparkSession, job: PreparedJob, partitions: int) -> DataFrame:
    """One row per input file to run (its index in ``job.pending``), sliced evenly over ``partitions`` tasks."""
    rows = [(index,) for index in range(len(job.pending.files))]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), FILE_SCHEMA)


def build(files: DataFrame, spec: TaskSpec, udf: str) -> DataFrame:
    """The per-partition stats DataFrame whose evaluation does the whole job."""
    if udf == "iterator":
        return files.mapInArrow(ReadAndClassify(spec), STATS_DDL)
    predictions = StructType.fromDDL(", ".join(f"{f.name} {_ddl(f)}" for f in PREDICTION_FIELDS))
    predict = pandas_udf(series_predict(spec.config), predictions)
    pixels = files.mapInArrow(ReadAndPreprocess(spec), PIXELS_DDL)
    rows = pixels.select("id", predict("pixels", "error").alias("p"), "error", FILE, ROW).select("id", "p.*", "error", FILE, ROW)
    return rows.mapInArrow(WriteParts(spec), STATS_DDL)


def _ddl(field) -> str:
    return {"int64": "long", "float": "float", "list<item: int64>": "array<long>", "list<item: float>": "array<float>"}[str(field.type)]


def run(spark: SparkSession, job: PreparedJob, args: argparse.Namespace, batch_size: int) -> tuple[float, list[int]]:
    """Run the Spark stages on ``job.pending``; returns seconds and the partitions that needed a retry.

    The parts are committed by the tasks; ``finish_job`` verifies them.
    """
    spec = TaskSpec(job.config, job.pending, job.parts, batch_size, args.prefetch)
    partitions = args.partitions or len(job.pending.files)
    started = time.perf_counter()
    try:
        stats = build(files_frame(spark, job, partitions), spec, args.udf).collect()
    except PythonException as e:
        raise storage_error_of(e) or e
    seconds = time.perf_counter() - started
    print(f"spark: {len(stats)} parts written, {sum(r.rows for r in stats)} rows", file=sys.stderr)
    return seconds, sorted({r.partition for r in stats if r.attempt > 0})


def storage_error_of(error: PythonException) -> StorageError | None:
    """The one-line StorageError a task died of (after its retries), if that is what it died of.

    Spark hands the driver the worker's traceback as text; our storage errors already name
    the URI and the fix, so the user gets that line instead of a JVM stack.
    """
    found = _WORKER_STORAGE_ERROR.findall(str(error))
    return StorageError(found[-1]) if found else None


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the job; returns the manifest."""
    args = get_spark_args_parser().parse_args(argv)
    config = config_from_args(args)
    if args.udf == "series" and config.decode == "gpu":
        raise JobError("--udf series reproduces the reference benchmark's CPU decode; --decode gpu needs --udf iterator")
    job = prepare_job(config)
    if job.finished is not None:
        return job.finished
    spark, owns = get_session(args.master, default_batch_size(job.config, has_gpu=False))
    try:
        gpus = spark.conf.get("spark.task.resource.gpu.amount", None)
        batch_size = default_batch_size(job.config, has_gpu=gpus is not None)
        if gpus is None:
            print("no spark.task.resource.gpu.amount set: each Python worker runs the model on CPU (or on cuda:0 if it sees a GPU)", file=sys.stderr)
        seconds, retried = run(spark, job, args, batch_size) if job.pending.files else (0.0, [])
        master = spark.sparkContext.master
    finally:
        if owns:
            spark.stop()
    extra = {"packages": ["pyspark"], "spark": {"master": master, "udf": args.udf, "prefetch": args.prefetch,
                                                "partitions": args.partitions or len(job.pending.files), "batch_size": batch_size,
                                                "retried_partitions": retried}}
    manifest = finish_job(job, "spark", seconds, extra)
    print_summary(manifest)
    return manifest


if __name__ == "__main__":
    sys.exit(run_main(main))
