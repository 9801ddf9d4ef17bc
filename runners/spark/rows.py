"""The executor side of the Spark API (``runners.spark.api``): a user's rows -> the output contract's columns.

``ClassifyRows`` is the ``mapInArrow`` function: the command's stages and its model cached per
Python worker (``runners.spark.udfs.classified``), over the user's Arrow batches instead of the
planned files, writing nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from job.api.rows import chunks, contract_table, preprocess_rows, unique_ids
from job.config import JobConfig
from job.execution import Execution
from job.feedback import LatestFeedback
from job.output.rows import EMBEDDING, ERROR_FIELD, ID_FIELD
from job.stages import Batch, Preprocess
from runners.spark.udfs import classified, udf_fields


class ClassifyRows:
    """The API's ``mapInArrow`` function (``runners.spark.api``): the user's rows -> the output contract's columns."""

    def __init__(self, config: JobConfig, execution: Execution, prefetch: int) -> None:
        self.config, self.execution, self.prefetch = config, execution, prefetch

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rows in classified(self.config, [self.execution], lambda feedback: self._preprocessed(batches, feedback),
                               self.prefetch):
            for _, table in rows:  # one model: its rows
                yield from _embedding_for_spark(contract_table(table, self.execution)).to_batches()

    def _preprocessed(self, batches: Iterator[pa.RecordBatch], feedback: LatestFeedback | None) -> Iterator[Batch]:
        preprocess = Preprocess(self.config, self.execution, feedback.poll if feedback is not None else None)
        for records in batches:
            for chunk in chunks(records, self.execution.batch_size):  # Spark's Arrow batches hold up to 10,000 rows
                yield preprocess_rows(preprocess, chunk, unique_ids)


def spark_fields(execution: Execution) -> list[pa.Field]:
    """The API's columns as Spark can declare them: the output's, the embedding as ``udf_fields`` carries it."""
    return [ID_FIELD, *udf_fields(execution), ERROR_FIELD]


def _embedding_for_spark(table: pa.Table) -> pa.Table:
    """The fixed-size embedding column as the list of float32 that ``spark_fields`` declares (through numpy, as
    ``runners.spark.udfs`` turns it back: old pyarrow cannot cast float16)."""
    if EMBEDDING not in table.column_names:
        return table
    column = table.column(EMBEDDING).combine_chunks()
    size = column.type.list_size
    values = column.values.slice(column.offset * size, len(column) * size).to_numpy(zero_copy_only=False)
    offsets = pa.array(np.arange(0, len(column) * size + 1, size, dtype=np.int32))
    lists = pa.ListArray.from_arrays(offsets, pa.array(values.astype(np.float32)), mask=column.is_null())
    return table.set_column(table.schema.get_field_index(EMBEDDING), EMBEDDING, lists)
