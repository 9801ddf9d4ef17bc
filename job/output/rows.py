"""The output contract: one row per input row, the same schema from every engine.

``output_schema(execution)`` is the one definition of the table's columns, which depend on the
run's plan: the prediction columns unless ``--embeddings only``, the ``embedding`` column when
embeddings are asked for, ``id`` first and ``error`` last always. Everything that declares,
casts or checks the output asks it: the part writer (``job.output.parts``), Spark's series UDF, the
SageMaker handler and its assembly, ``runners.compare`` and the tests' contract.

``prediction_table`` is the only place output rows are built (``error_table`` for rows that
never reached the model), so the engines cannot drift: a row that decoded gets its top-k, their
class names and its embedding; a row that did not gets nulls and its ``error``. ``label_name``
and ``topk_label_names`` are always there, null when the model's class names are not known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # only types here: the CPU stage's processes never load torch
    from inference import Predictions
    from job.execution import Execution

EMBEDDING = "embedding"  # the pooled feature: a fixed-size list, one value per feature
ID_FIELD = pa.field("id", pa.string(), nullable=False)
ERROR_FIELD = pa.field("error", pa.string())  # null: classified; else why not
PREDICTION_FIELDS = (
    pa.field("label", pa.int64()),  # top-1 class index; null when error is set
    pa.field("label_name", pa.string()),  # its class name; null when the model's names are not known
    pa.field("score", pa.float32()),  # its softmax probability
    pa.field("topk_labels", pa.list_(pa.int64())),
    pa.field("topk_label_names", pa.list_(pa.string())),
    pa.field("topk_scores", pa.list_(pa.float32())),
)


def output_schema(execution: Execution) -> pa.Schema:
    """The columns of this run's output: id, the predictions and/or the embedding, error."""
    fields = [ID_FIELD, *(PREDICTION_FIELDS if execution.predictions else ())]
    if execution.embeddings is not None:
        fields.append(embedding_field(execution.embeddings, execution.model.embedding_dim))
    return pa.schema([*fields, ERROR_FIELD])


def embedding_field(dtype: str, dim: int) -> pa.Field:
    """``embedding``: ``dim`` values of ``dtype`` (float16 or float32) per row; null for error rows."""
    return pa.field(EMBEDDING, pa.list_(pa.from_numpy_dtype(np.dtype(dtype)), dim))


def prediction_table(ids: Sequence[str], errors: Sequence[str | None], predictions: Predictions,
                     execution: Execution) -> pa.Table:
    """Merge the model's answers for the rows without errors back into one row per input row.

    ``predictions`` holds one entry per row whose ``errors[i]`` is None, in order.
    """
    ok = np.array([e is None for e in errors], dtype=bool)
    answered = len(predictions.label if predictions.label is not None else predictions.embeddings)
    if int(ok.sum()) != answered:
        raise ValueError(f"{int(ok.sum())} classifiable rows but {answered} predictions")
    columns = {"id": pa.array(list(ids), pa.string())}
    if execution.predictions:
        columns.update(_prediction_columns(predictions, ok, execution.model.class_names))
    if execution.embeddings is not None:
        columns[EMBEDDING] = embedding_column(predictions.embeddings, ok)
    columns["error"] = pa.array(list(errors), pa.string())
    return pa.Table.from_pydict(columns, schema=output_schema(execution))


def error_table(ids: Sequence[str], errors: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Rows in ``schema`` (an ``output_schema``) with ``error`` set and nothing else: rows the model never saw."""
    n = len(ids)
    middle = [pa.nulls(n, field.type) for field in list(schema)[1:-1]]
    return pa.Table.from_arrays([pa.array(list(ids), pa.string()), *middle, pa.array(list(errors), pa.string())], schema=schema)


def _prediction_columns(predictions: Predictions, ok: np.ndarray, names: Sequence[str] | None) -> dict[str, pa.Array]:
    k = predictions.topk_labels.shape[1]
    labels = _scatter(predictions.label, ok, pa.int64())
    topk = _scatter_lists(predictions.topk_labels, ok, pa.int64(), k)
    return {
        "label": labels,
        "label_name": _names_of(labels, names),
        "score": _scatter(predictions.score, ok, pa.float32()),
        "topk_labels": topk,
        "topk_label_names": _names_of(topk, names),
        "topk_scores": _scatter_lists(predictions.topk_scores, ok, pa.float32(), k),
    }


def _names_of(labels: pa.Array, names: Sequence[str] | None) -> pa.Array:
    """The class name of each label (a list of them for a list of labels); all null without names."""
    is_list = pa.types.is_list(labels.type)
    if names is None:
        return pa.nulls(len(labels), pa.list_(pa.string()) if is_list else pa.string())
    table = pa.array(names, pa.string())
    if not is_list:
        return table.take(labels)  # a null label takes a null name
    return pa.ListArray.from_arrays(labels.offsets, table.take(labels.values), mask=labels.is_null())


def _scatter(values: np.ndarray, ok: np.ndarray, type_: pa.DataType) -> pa.Array:
    full = np.zeros(len(ok), dtype=values.dtype)
    full[ok] = values
    return pa.array(full, type_, mask=~ok)


def _scatter_lists(values: np.ndarray, ok: np.ndarray, type_: pa.DataType, k: int) -> pa.Array:
    """A list<type_> column with the k values of ``values`` (K, k) per classified row and null elsewhere."""
    counts = np.where(ok, k, 0)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1), type_), mask=pa.array(~ok))


def embedding_column(values: np.ndarray, ok: np.ndarray) -> pa.Array:
    """``values`` (K, D) as a fixed-size list column, one row per classified row and null elsewhere.

    A fixed-size list keeps D slots under a null row too (zeros here), so the rows' values lie
    back to back: one buffer, no offsets, what readers turn into an (N, D) array without a copy.
    """
    full = values
    if not ok.all():
        full = np.zeros((len(ok), values.shape[1]), dtype=values.dtype)
        full[ok] = values
    flat = pa.array(full.reshape(-1), pa.from_numpy_dtype(values.dtype))
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1], mask=pa.array(~ok))
