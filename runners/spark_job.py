"""python -m runners.spark_job: batch inference on Spark with Arrow/pandas UDFs.

    python -m runners.spark_job --input s3://bucket/images/ --output s3://bucket/preds/

A DataFrame of the planned input files' indices, one row per file, over ``--partitions``
tasks; each task reads its files through pyarrow (no hadoop-aws jars, so S3 works on any
Spark), preprocesses, classifies and commits one part per input file (a retried attempt
rewrites the same part). ``--udf iterator`` (default): one ``mapInArrow`` stage, the model
cached per Python worker; ``--udf series``: the reference benchmark's Series pandas UDF,
which rebuilds the model every batch, kept to measure that cost. Where this process already
runs Spark (Databricks, a notebook) the job uses its session and leaves it as it was;
otherwise it starts one on ``--master``, by default ``local[*,4]`` (plain ``local[*]`` never
retries a task): ``runners.spark.session``. Why ``mapInArrow``, and how to give tasks GPUs:
docs/SPARK.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from runners import require_extra

require_extra("spark", __name__)  # before pyspark's import: a missing extra is one line, not a traceback
from pyspark import Accumulator  # noqa: E402
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import pandas_udf
from pyspark.sql.pandas.types import from_arrow_schema

from job import progress
from job.cli import positive_int
from job.config import JobConfig
from job.driver import commands
from job.engine import Engine, EngineRun, Job
from job.errors import DataError, JobError
from job.execution import Capabilities
from job.output.parts import FILE, ROW
from job.several.stages import MODEL
from job.timeline import DECODE_SECONDS, DECODES, DEVICE_SECONDS
from runners.spark.prefetch import DEFAULT_PREFETCH
from runners.spark.session import DEFAULT_MASTER, SparkSessionFor
from runners.spark.udfs import (
    PIXELS_SCHEMA,
    STATS_SCHEMA,
    ReadAndClassify,
    ReadAndPreprocess,
    TaskSpec,
    WriteParts,
    series_predict,
    udf_fields,
)
from storage import StorageError

# The last line of a Python traceback raised by our storage layer in a worker.
_WORKER_STORAGE_ERROR = re.compile(r"^(?:[\w.]+\.)?StorageError: (.+)$", re.MULTILINE)
FILE_SCHEMA = f"{FILE} int"
ACCUMULATOR_POLL_SECONDS = 1.0  # how often the progress display reads the tasks' rows
# Default tasks per core of the Spark (Spark's tuning guide: 2-3). A task costs about 0.25 CPU s of its own
# (scheduling, the Python worker's set-up, the broadcast, its threads) on the 2-vCPU VM: one task per file
# spent 20 of 50 CPU s on 80 files of 256 raw images; 3 a core keeps every core busy to the end when files
# differ in size, and a retried task redoes a third of a core's share, not the whole input.
TASKS_PER_CORE = 3


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("spark")
    group.add_argument("--master", help=f"Spark master, e.g. spark://host:7077; not given: the Spark this process runs, else spark-submit's --master, else {DEFAULT_MASTER}")
    group.add_argument("--udf", choices=("iterator", "series"), default="iterator",
                       help="iterator: mapInArrow, model loaded once per Python worker; "
                            "series: the reference benchmark's Series pandas UDF, model rebuilt every batch (for comparison)")
    group.add_argument("--prefetch", type=positive_int(0), default=DEFAULT_PREFETCH,
                       help="batches read and decoded ahead in a thread while the model runs; 0: none")
    group.add_argument("--partitions", type=positive_int(),
                       help=f"Spark tasks; not given: {TASKS_PER_CORE} per core of the Spark, at most one per input file")


def files_frame(spark: SparkSession, job: Job, partitions: int) -> DataFrame:
    """One row per input file to run (its index in ``job.pending``), sliced evenly over ``partitions`` tasks."""
    rows = [(index,) for index in range(len(job.pending.files))]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), FILE_SCHEMA)


def default_partitions(files: int, cores: int) -> int:
    """Tasks when ``--partitions`` is not given: ``TASKS_PER_CORE`` per core, never more than the files (a file is
    the unit of work), never none."""
    return max(1, min(files, TASKS_PER_CORE * max(1, cores)))


def build(files: DataFrame, spec: TaskSpec, udf: str) -> DataFrame:
    """The per-partition stats DataFrame whose evaluation does the whole job."""
    if udf == "iterator":
        return files.mapInArrow(ReadAndClassify(spec), from_arrow_schema(STATS_SCHEMA))
    predictions = from_arrow_schema(pa.schema(udf_fields(spec.job.execution)))  # the output columns as Spark types (pyspark 3.5 and 4)
    predict = pandas_udf(series_predict(spec.job.config, spec.job.execution), predictions)
    pixels = files.mapInArrow(ReadAndPreprocess(spec), from_arrow_schema(PIXELS_SCHEMA))
    rows = pixels.select("id", predict("pixels", "error").alias("p"), "error", FILE, ROW).select("id", "p.*", "error", FILE, ROW)
    return rows.mapInArrow(WriteParts(spec), from_arrow_schema(STATS_SCHEMA))


def run(session: SparkSessionFor, job: Job, args: argparse.Namespace) -> EngineRun:
    """Run the Spark stages on ``job.pending``; the tasks commit the parts, ``job.driver`` verifies them."""
    spark, batch_size = session.session, job.execution.batch_size
    # Arrow batches of one model batch (a runtime SQL setting, on a session the job started only):
    # the Series UDF then sees what the benchmark saw.
    session.tune("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_size))
    spec = TaskSpec.of(spark.sparkContext, job, args.prefetch)
    partitions = args.partitions or default_partitions(len(job.pending.files), spark.sparkContext.defaultParallelism)
    try:
        with following(spec.rows_done):
            stats = build(files_frame(spark, job, partitions), spec, args.udf).collect()
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            session.interrupted()  # before anything else reaches the JVM: what it logs now is about the interrupt
        spec.release(finished=False)
        if isinstance(e, PythonException):
            raise storage_error_of(e) or e
        raise
    spec.release()
    failed = [r.error for r in stats if r.error is not None]
    if failed:  # the tasks reported it instead of failing, so Spark did not retry it (runners.spark.udfs.write_parts)
        raise DataError(failed[0])
    settings = {"master": spark.sparkContext.master, "udf": args.udf, "prefetch": args.prefetch, "partitions": partitions,
                "parts": sum(r.parts for r in stats), "retried_partitions": sorted({r.partition for r in stats if r.attempt > 0})}
    predictors = _concurrent_tasks(spark, partitions)
    if len(job.runs) == 1:
        return EngineRun(settings={"spark": settings}, progress=[(r.done_at, r.rows) for r in stats],
                         device_seconds=sum(r[DEVICE_SECONDS] for r in stats), predictors=predictors)
    models = [([(r.done_at, r.rows) for r in stats if r[MODEL] == m], sum(r[DEVICE_SECONDS] for r in stats if r[MODEL] == m))
              for m in range(len(job.runs))]  # several models (job.several): each table its own figures
    return EngineRun(settings={"spark": settings}, progress=models[0][0], device_seconds=sum(s for _, s in models),
                     predictors=predictors, models=models, decodes=int(sum(r[DECODES] for r in stats)),
                     decode_seconds=round(sum(r[DECODE_SECONDS] for r in stats), 3))


@contextmanager
def following(rows_done: Accumulator) -> Iterator[None]:
    """While the block runs (the stage's ``collect``), the progress display follows the tasks' rows.

    Spark adds a task's rows to the accumulator when the task succeeds, so the count moves
    task by task (``TASKS_PER_CORE`` tasks a core by default).
    """
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(ACCUMULATOR_POLL_SECONDS):
            progress.set_done(rows_done.value)

    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        progress.set_done(rows_done.value)


def _concurrent_tasks(spark: SparkSession, partitions: int) -> int:
    """Tasks that ran at once (each with its own model): the default parallelism, at most one per partition."""
    return max(1, min(partitions, spark.sparkContext.defaultParallelism))


def storage_error_of(error: PythonException) -> StorageError | None:
    """The one-line StorageError a task died of (after its retries), if that is what it died of.

    Spark hands the driver the worker's traceback as text; our storage errors already name
    the URI and the fix, so the user gets that line instead of a JVM stack.
    """
    found = _WORKER_STORAGE_ERROR.findall(str(error))
    return StorageError(found[-1]) if found else None


def check_args(args: argparse.Namespace, config: JobConfig) -> None:
    if args.udf == "series" and config.decode not in (None, "cpu"):
        raise JobError(f"--udf series reproduces the reference benchmark's CPU decode; --decode {config.decode} needs --udf iterator")
    if args.udf == "series" and args.models is not None:
        raise JobError("--udf series reproduces the reference benchmark's one model a UDF; --models needs --udf iterator")


ENGINE = Engine(
    name="spark", module="runners.spark_job", description=__doc__.splitlines()[0],
    # --decode auto adapts in each task: its decode thread and its model share a Python worker.
    capabilities=Capabilities(),
    add_arguments=add_spark_arguments, start=lambda args: SparkSessionFor(args.master, args.verbose),
    execute=lambda job, session, args: run(session, job, args), packages=("pyspark",), check=check_args,
)
main, cli = commands(ENGINE)

if __name__ == "__main__":
    sys.exit(cli())
