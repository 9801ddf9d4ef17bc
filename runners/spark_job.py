"""python -m runners.spark_job: batch inference on Spark with Arrow/pandas UDFs.

    python -m runners.spark_job --input s3://bucket/images/ --output s3://bucket/preds/

A DataFrame of the planned input files' indices, one row per file, over ``--partitions``
tasks; each task reads its files through pyarrow (no hadoop-aws jars, so S3 works on any
Spark), preprocesses, classifies and commits one part per input file (a retried attempt
rewrites the same part). ``--udf iterator`` (default): one ``mapInArrow`` stage, the model
cached per Python worker; ``--udf series``: the reference benchmark's Series pandas UDF,
which rebuilds the model every batch, kept to measure that cost. With an active
SparkSession (Databricks, a notebook) the job uses it; otherwise it starts one on
``--master``, by default ``local[*,4]`` (plain ``local[*]`` never retries a task). Why
``mapInArrow``, and how to give tasks GPUs: docs/SPARK.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import pyarrow as pa
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import StructType

from job.cli import positive_int
from job.config import JobConfig
from job.driver import EngineRun, Job
from job.engine import Engine
from job.errors import JobError
from job.execution import Capabilities, Devices
from job.parts import FILE, ROW
from job.timeline import DEVICE_SECONDS
from runners.spark.udfs import (
    PIXELS_DDL,
    PREDICTION_FIELDS,
    STATS_DDL,
    ReadAndClassify,
    ReadAndPreprocess,
    TaskSpec,
    WriteParts,
    device_name,
    series_predict,
)
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


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("spark")
    group.add_argument("--master", help=f"Spark master, e.g. spark://host:7077 (default: the active SparkSession, else {DEFAULT_MASTER})")
    group.add_argument("--udf", choices=("iterator", "series"), default="iterator",
                       help="iterator: mapInArrow, model loaded once per Python worker (default); "
                            "series: the reference benchmark's Series pandas UDF, model rebuilt every batch (for comparison)")
    group.add_argument("--prefetch", type=positive_int(0), default=DEFAULT_PREFETCH,
                       help=f"batches read and decoded ahead in a thread while the model runs; 0: none (default: {DEFAULT_PREFETCH})")
    group.add_argument("--partitions", type=positive_int(), help="Spark tasks (default: one per input file)")


def get_session(master: str | None) -> tuple[SparkSession, bool]:
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
    session = builder.master(master).appName("streaming-batch-inference").getOrCreate()
    # Progress and the summary, not the JVM's INFO wall.
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def files_frame(spark: SparkSession, job: Job, partitions: int) -> DataFrame:
    """One row per input file to run (its index in ``job.pending``), sliced evenly over ``partitions`` tasks."""
    rows = [(index,) for index in range(len(job.pending.files))]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), FILE_SCHEMA)


def build(files: DataFrame, spec: TaskSpec, udf: str) -> DataFrame:
    """The per-partition stats DataFrame whose evaluation does the whole job."""
    if udf == "iterator":
        return files.mapInArrow(ReadAndClassify(spec), STATS_DDL)
    predictions = StructType.fromDDL(", ".join(f"{f.name} {_ddl(f)}" for f in PREDICTION_FIELDS))
    predict = pandas_udf(series_predict(spec.job.config, spec.job.execution), predictions)
    pixels = files.mapInArrow(ReadAndPreprocess(spec), PIXELS_DDL)
    rows = pixels.select("id", predict("pixels", "error").alias("p"), "error", FILE, ROW).select("id", "p.*", "error", FILE, ROW)
    return rows.mapInArrow(WriteParts(spec), STATS_DDL)


def _ddl(field: pa.Field) -> str:
    """Spark's DDL type of an output column (int64, float32, or a list of either)."""
    if pa.types.is_list(field.type):
        return f"array<{_ddl(pa.field('item', field.type.value_type))}>"
    if pa.types.is_int64(field.type):
        return "long"
    if pa.types.is_float32(field.type):
        return "float"
    raise TypeError(f"no Spark DDL for output column {field.name} of type {field.type}")


def run(session: SparkSessionFor, job: Job, args: argparse.Namespace) -> EngineRun:
    """Run the Spark stages on ``job.pending``; the tasks commit the parts, ``job.driver`` verifies them."""
    spark, batch_size = session.session, job.execution.batch_size
    if session.owned:
        # Arrow batches of one model batch (a runtime SQL setting): the Series UDF then sees what
        # the benchmark saw. A session the user made keeps the user's setting.
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_size))
    spec = TaskSpec(job, args.prefetch)
    partitions = args.partitions or len(job.pending.files)
    try:
        stats = build(files_frame(spark, job, partitions), spec, args.udf).collect()
    except PythonException as e:
        raise storage_error_of(e) or e
    print(f"spark: {len(stats)} parts written, {sum(r.rows for r in stats)} rows", file=sys.stderr)
    settings = {"master": spark.sparkContext.master, "udf": args.udf, "prefetch": args.prefetch, "partitions": partitions,
                "retried_partitions": sorted({r.partition for r in stats if r.attempt > 0})}
    return EngineRun(settings={"spark": settings}, progress=[(r.committed_at, r.rows) for r in stats],
                     device_seconds=sum(r[DEVICE_SECONDS] for r in stats), predictors=_concurrent_tasks(spark, partitions))


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


class SparkSessionFor:
    """``with SparkSessionFor(master):`` the active session, else a new one, stopped on exit.

    Entered while the driver plans the input (``job.driver.run_job``): the JVM starts meanwhile.
    """

    def __init__(self, master: str | None) -> None:
        self.master = master
        self.session: SparkSession | None = None
        self.owned = False

    def __enter__(self) -> SparkSessionFor:
        self.session, self.owned = get_session(self.master)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned and self.session is not None:
            self.session.stop()

    def gives_gpus(self) -> bool:
        """Whether Spark gives each task a GPU (read from the session, once it runs)."""
        return self.session.conf.get("spark.task.resource.gpu.amount", None) is not None

    def devices(self) -> Devices:
        """A GPU per task when Spark gives tasks GPUs (its type read by one probe task), else the CPU."""
        if not self.gives_gpus():
            print("no spark.task.resource.gpu.amount set: each Python worker runs the model on CPU", file=sys.stderr)
            return Devices("cpu")
        name = self.session.sparkContext.parallelize([0], 1).map(lambda _: device_name()).first()
        if name is None:
            raise JobError("Spark gives each task a GPU (spark.task.resource.gpu.amount), but CUDA is not usable on the "
                           "executors: install a torch built for their CUDA driver")
        return Devices("cuda", name)


def check_args(args: argparse.Namespace, config: JobConfig) -> None:
    if args.udf == "series" and config.decode not in (None, "cpu"):
        raise JobError(f"--udf series reproduces the reference benchmark's CPU decode; --decode {config.decode} needs --udf iterator")


ENGINE = Engine(
    name="spark", module="runners.spark_job", description=__doc__.splitlines()[0],
    # --decode auto adapts in each task: its decode thread and its model share a Python worker.
    capabilities=Capabilities(),
    add_arguments=add_spark_arguments, start=lambda args: SparkSessionFor(args.master),
    execute=lambda job, session, args: run(session, job, args), packages=("pyspark",), check=check_args,
)
main, cli = ENGINE.main, ENGINE.cli

if __name__ == "__main__":
    sys.exit(cli())
