"""The output contract: one row per input row, the same schema from every engine.

``prediction_table`` is the only place output rows are built, so the engines cannot drift:
a row that decoded gets its top-k; a row that did not gets nulls and its ``error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # only a type here: the CPU stage's processes never load torch
    from inference import Predictions

OUTPUT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("label", pa.int64()),  # top-1 ImageNet class index; null when error is set
        pa.field("score", pa.float32()),  # its softmax probability
        pa.field("topk_labels", pa.list_(pa.int64())),
        pa.field("topk_scores", pa.list_(pa.float32())),
        pa.field("error", pa.string()),  # null: classified; else why not
    ]
)


def prediction_table(ids: Sequence[str], errors: Sequence[str | None], predictions: Predictions) -> pa.Table:
    """Merge predictions for the rows without errors back into one row per input row.

    ``predictions`` holds one entry per row whose ``errors[i]`` is None, in order.
    """
    ok = np.array([e is None for e in errors], dtype=bool)
    if int(ok.sum()) != len(predictions.label):
        raise ValueError(f"{int(ok.sum())} classifiable rows but {len(predictions.label)} predictions")
    topk = predictions.topk_labels.shape[1]
    columns = {
        "id": pa.array(list(ids), pa.string()),
        "label": _scatter(predictions.label, ok, pa.int64()),
        "score": _scatter(predictions.score, ok, pa.float32()),
        "topk_labels": _scatter_lists(predictions.topk_labels, ok, topk, pa.int64()),
        "topk_scores": _scatter_lists(predictions.topk_scores, ok, topk, pa.float32()),
        "error": pa.array(list(errors), pa.string()),
    }
    return pa.Table.from_pydict(columns, schema=OUTPUT_SCHEMA)


def _scatter(values: np.ndarray, ok: np.ndarray, type_: pa.DataType) -> pa.Array:
    full = np.zeros(len(ok), dtype=values.dtype)
    full[ok] = values
    return pa.array(full, type_, mask=~ok)


def _scatter_lists(values: np.ndarray, ok: np.ndarray, k: int, type_: pa.DataType) -> pa.Array:
    """A list<type_> column with k values per classified row and null elsewhere."""
    flat = values.reshape(-1)
    counts = np.where(ok, k, 0)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(flat, type_), mask=pa.array(~ok))
