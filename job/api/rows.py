"""A batch of the user's rows -> a ``job.stages`` batch, and the stages' output -> the output contract.

The user's rows hold the image column (encoded bytes, or raw pixels) and, optionally, the id
column; any other column is left behind (join the output back on ``id`` to keep it). Without an
id column each row gets an id from ``fallback`` (the caller's: positions for ``Classifier``, a
unique string for the engines, whose rows have no global position).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from job.api.columns import stage_records
from job.errors import DataError, JobError
from job.execution import Execution
from job.input.dataset_check import SHAPE_COLUMNS
from job.output.rows import output_schema
from job.stages import Batch, Preprocess

Records = pa.RecordBatch | pa.Table
IdFallback = Callable[[int], list[str]]  # rows -> their ids, when the rows have no id column


def unique_ids(rows: int) -> list[str]:
    """Ids for rows with no id column and no global position (a Ray block, a Spark batch): unique, not reproducible."""
    batch = uuid.uuid4().hex
    return [f"{batch}:{row}" for row in range(rows)]


def input_columns(names: list[str], image_column: str, id_column: str) -> list[str]:
    """The columns the stages read from rows with ``names``: the image, the id and the raw shape's, when there."""
    if image_column not in names:
        raise JobError(f"image_column={image_column!r}: the rows have no such column (they have {', '.join(names)}); "
                       "pass image_column= naming the column of image bytes")
    wanted = (image_column, id_column, *SHAPE_COLUMNS)
    return [name for name in wanted if name in names]


def chunks(records: Records, rows: int) -> Iterator[Records]:
    """``records`` in slices of at most ``rows`` rows (one model batch each), without a copy."""
    for start in range(0, records.num_rows, rows):
        yield records.slice(start, rows)


def ids_of(records: Records, id_column: str, fallback: IdFallback) -> list[str]:
    """The rows' ids as strings (an integer id column too); ``DataError`` for a null id."""
    if id_column not in records.schema.names:
        return fallback(records.num_rows)
    column = records.column(id_column)
    if column.null_count:
        raise DataError(f"id column {id_column!r} has a null at row {column.is_null().index(True).as_py()} of a batch; "
                        "give every row an id, or drop the column and let classify name the rows")
    return pc.cast(column, pa.string()).to_pylist()


def preprocess_rows(preprocess: Preprocess, records: Records, fallback: IdFallback) -> Batch:
    """One batch of the user's rows through the CPU stage, as the command's files go through it (a tensor or an
    image struct read as raw pixels first: ``job.api.columns``)."""
    records = stage_records(records, preprocess.config.image_column)
    batch = preprocess(ids_of(records, preprocess.config.id_column, fallback), records)
    preprocess.listen()  # --decode auto: the device's latest word, for the next batch
    return batch


def preprocess_rows_many(preprocess: Preprocess, records: Records, fallback: IdFallback) -> list[Batch]:
    """``preprocess_rows`` for several models (``models=``): a batch in each of the preprocess's recipes, from one
    decode an image where the recipes allow (``job.stages.Preprocess.several``)."""
    records = stage_records(records, preprocess.config.image_column)
    return preprocess.several(ids_of(records, preprocess.config.id_column, fallback), records, None, None,
                              range(len(preprocess.recipes)))


def contract_table(table: pa.Table, execution: Execution) -> pa.Table:
    """The ``Classify`` stage's table without the job's bookkeeping (timeline, positions): the output contract's columns."""
    return table.select(output_schema(execution).names)


def contract_schema(execution: Execution) -> pa.Schema:
    """The output contract's columns (``contract_table``'s)."""
    return output_schema(execution)
