"""The output table: one row per input row, predictions scattered back around error rows."""

from __future__ import annotations

import numpy as np
import pytest

from inference import Predictions
from job.rows import OUTPUT_SCHEMA, prediction_table


def predictions(n: int, k: int = 3) -> Predictions:
    labels = np.arange(n * k, dtype=np.int64).reshape(n, k)
    scores = np.linspace(0.9, 0.1, n * k, dtype=np.float32).reshape(n, k)
    return Predictions(labels[:, 0].copy(), scores[:, 0].copy(), labels, scores)


def test_rows_with_errors_get_nulls_and_the_rest_keep_order():
    table = prediction_table(["a", "b", "c", "d"], [None, "bad", None, "worse"], predictions(2))
    assert table.schema == OUTPUT_SCHEMA
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["a", "b", "c", "d"]
    assert rows[0]["label"] == 0 and rows[0]["topk_labels"] == [0, 1, 2]
    assert rows[2]["label"] == 3 and rows[2]["topk_labels"] == [3, 4, 5]
    assert rows[1] == {"id": "b", "label": None, "score": None, "topk_labels": None, "topk_scores": None, "error": "bad"}
    assert rows[3]["error"] == "worse" and rows[0]["error"] is None


def test_all_errors_and_no_errors():
    assert prediction_table(["x"], ["e"], predictions(0)).column("label").null_count == 1
    assert prediction_table(["x", "y"], [None, None], predictions(2)).column("error").null_count == 2


def test_mismatched_counts_are_a_bug_not_silence():
    with pytest.raises(ValueError, match="2 classifiable rows but 1 predictions"):
        prediction_table(["a", "b"], [None, None], predictions(1))
