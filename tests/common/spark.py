"""A local SparkSession for tests.

Ray and Spark never share a test process: a module that needs both runs its Ray jobs in a
subprocess (``tests.common.ray_runs``) and Spark in-process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession

from runners.spark.udfs import ReadAndClassify


@contextmanager
def local_spark(task_attempts: int = 1, records_per_batch: int | None = None) -> Iterator[SparkSession]:
    """A 2-core local Spark; ``task_attempts`` > 1 lets a failed task be retried (plain local[N] never retries)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(f"local[2,{task_attempts}]").config("spark.ui.enabled", "false")
    if records_per_batch is not None:
        builder = builder.config("spark.sql.execution.arrow.maxRecordsPerBatch", str(records_per_batch))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


class FailFirstAttemptOfPartition1(ReadAndClassify):
    """The real task, whose first attempt of partition 1 dies after committing all its parts.

    Installed in place of ``spark_job.ReadAndClassify`` by a test; Spark pickles it by
    reference, and its Python workers import it from this module.
    """

    def __call__(self, files: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from super().__call__(files)
        context = TaskContext.get()
        if context.partitionId() == 1 and context.attemptNumber() == 0:
            raise RuntimeError("injected failure of partition 1, attempt 0, after its parts were committed")
