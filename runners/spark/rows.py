"""The executor side of the Spark API (``runners.spark.api``): a user's rows -> the output contract's columns.

``ClassifyRows`` is the ``mapInArrow`` function: the command's stages and its model cached per
Python worker (``runners.spark.udfs.classified``), over the user's Arrow batches instead of the
planned files, writing nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from job.api.rows import chunks, contract_table, preprocess_rows, preprocess_rows_many, unique_ids
from job.config import JobConfig
from job.execution import Execution
from job.feedback import LatestFeedback
from job.output.rows import EMBEDDING, ERROR_FIELD, ID_FIELD
from job.several.stages import recipe_groups, rows_blob, rows_of_blob
from job.stages import Batch, Preprocess
from runners.spark.udfs import classified, udf_fields


class ClassifyRows:
    """The API's ``mapInArrow`` function (``runners.spark.api``): the user's rows -> the output contract's columns; with
    several models (``models=``), each model's rows as one IPC stream a batch (``job.several.stages.rows_blob``)."""

    def __init__(self, config: JobConfig, execution: Execution, prefetch: int, executions: tuple = ()) -> None:
        self.config, self.execution, self.prefetch = config, execution, prefetch
        self.executions = executions or (execution,)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rows in classified(self.config, self.executions, lambda feedback: self._preprocessed(batches, feedback),
                               self.prefetch):
            if len(self.executions) == 1:
                for _, table in rows:  # one model: its rows
                    yield from _embedding_for_spark(contract_table(table, self.execution)).to_batches()
            elif rows:
                spark_rows = [(m, _embedding_for_spark(contract_table(t, self.executions[m]))) for m, t in rows]
                yield from rows_blob(spark_rows).to_batches()

    def _preprocessed(self, batches: Iterator[pa.RecordBatch], feedback: LatestFeedback | None) -> Iterator[Batch]:
        recipes = recipe_groups(self.executions)[0] if len(self.executions) > 1 else ()
        preprocess = Preprocess(self.config, self.execution, feedback.poll if feedback is not None else None, recipes)
        size = max(e.batch_size for e in self.executions)
        for records in batches:
            for chunk in chunks(records, size):  # Spark's Arrow batches hold up to 10,000 rows
                if recipes:
                    yield from preprocess_rows_many(preprocess, chunk, unique_ids)
                else:
                    yield preprocess_rows(preprocess, chunk, unique_ids)


class ModelRows:
    """The API's ``models=``: one model's rows out of the blobs ``ClassifyRows`` made for several."""

    def __init__(self, model: int) -> None:
        self.model = model

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for model, table in rows_of_blob(pa.Table.from_batches([batch])):
                if model == self.model:
                    yield from table.to_batches()


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
