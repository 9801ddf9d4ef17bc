"""The output table: one row per input row, predictions, names and embeddings scattered back around error rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from inference import Predictions
from job.config import JobConfig
from job.output.rows import error_table, output_schema, plain_types, prediction_table
from tests.common.plans import cpu_execution

PLAN = cpu_execution(JobConfig(input=None, output=None, weights="random", topk=3))
NAMES = tuple(f"class {i}" for i in range(1000))
NAMED = dataclasses.replace(PLAN, model=dataclasses.replace(PLAN.model, class_names=NAMES))


def predictions(n: int, k: int = 3, dim: int | None = None, dtype: str = "float16") -> Predictions:
    labels = np.arange(n * k, dtype=np.int64).reshape(n, k)
    scores = np.linspace(0.9, 0.1, n * k, dtype=np.float32).reshape(n, k)
    embeddings = None if dim is None else np.arange(n * dim).reshape(n, dim).astype(dtype)
    return Predictions(labels[:, 0].copy(), scores[:, 0].copy(), labels, scores, embeddings)


def test_rows_with_errors_get_nulls_and_the_rest_keep_order():
    table = prediction_table(["a", "b", "c", "d"], [None, "bad", None, "worse"], predictions(2), PLAN)
    assert table.schema == output_schema(PLAN)
    assert table.schema.names == ["id", "label", "label_name", "score", "topk_labels", "topk_label_names", "topk_scores", "error"]
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["a", "b", "c", "d"]
    assert rows[0]["label"] == 0 and rows[0]["topk_labels"] == [0, 1, 2]
    assert rows[2]["label"] == 3 and rows[2]["topk_labels"] == [3, 4, 5]
    assert rows[1] == {"id": "b", "label": None, "label_name": None, "score": None, "topk_labels": None,
                       "topk_label_names": None, "topk_scores": None, "error": "bad"}
    assert rows[3]["error"] == "worse" and rows[0]["error"] is None
    assert rows[0]["label_name"] is None and rows[0]["topk_label_names"] is None  # random weights: no names known


def test_names_follow_the_labels():
    rows = prediction_table(["a", "b", "c"], [None, "bad", None], predictions(2), NAMED).to_pylist()
    assert (rows[0]["label_name"], rows[0]["topk_label_names"]) == ("class 0", ["class 0", "class 1", "class 2"])
    assert (rows[2]["label_name"], rows[2]["topk_label_names"]) == ("class 3", ["class 3", "class 4", "class 5"])
    assert rows[1]["label_name"] is None and rows[1]["topk_label_names"] is None


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_embeddings_beside_predictions_are_a_fixed_size_list_in_their_dtype(dtype):
    plan = dataclasses.replace(PLAN, embeddings=dtype)
    dim = plan.model.embedding_dim
    table = prediction_table(["a", "b", "c"], [None, "bad", None], predictions(2, dim=dim, dtype=dtype), plan)
    assert table.schema == output_schema(plan) and table.schema.names[-2:] == ["embedding", "error"]
    assert table.schema.field("embedding").type == pa.list_(pa.from_numpy_dtype(np.dtype(dtype)), dim)
    column = table.column("embedding").combine_chunks()
    assert column.null_count == 1 and not column.is_valid()[1].as_py()
    values = column.values.to_numpy().reshape(3, dim)  # one buffer: the rows' values back to back
    np.testing.assert_array_equal(values[[0, 2]], np.arange(2 * dim).reshape(2, dim).astype(dtype))
    assert table.column("label").to_pylist() == [0, None, 3]


def test_embeddings_only_leave_the_prediction_columns_out():
    plan = dataclasses.replace(PLAN, predictions=False, embeddings="float16")
    alone = Predictions(None, None, None, None, np.ones((1, plan.model.embedding_dim), np.float16))
    table = prediction_table(["a", "b"], ["bad", None], alone, plan)
    assert table.schema.names == ["id", "embedding", "error"] == output_schema(plan).names
    assert table.column("embedding").null_count == 1 and table.column("error").to_pylist() == ["bad", None]


def test_error_rows_fit_every_schema():
    for plan in (PLAN, dataclasses.replace(PLAN, predictions=False, embeddings="float32")):
        rows = error_table(["x", "y"], ["lost", "gone"], output_schema(plan))
        assert rows.schema == output_schema(plan) and rows.column("error").to_pylist() == ["lost", "gone"]
        assert all(rows.column(name).null_count == 2 for name in rows.schema.names[1:-1])


def test_all_errors_and_no_errors():
    assert prediction_table(["x"], ["e"], predictions(0), PLAN).column("label").null_count == 1
    assert prediction_table(["x", "y"], [None, None], predictions(2), PLAN).column("error").null_count == 2


def test_mismatched_counts_are_a_bug_not_silence():
    with pytest.raises(ValueError, match="2 classifiable rows but 1 predictions"):
        prediction_table(["a", "b"], [None, None], predictions(1), PLAN)


def test_a_table_writers_types_read_back_as_the_plain_types_of_what_they_hold():
    """delta-rs hands strings back as string_view, pyiceberg as large_string and large_list, a writer may
    dictionary-encode: every step that reads a table compares them as string, binary and list."""
    written = pa.table({
        "id": pa.array(["a", None], pa.string_view()),
        "source_file": pa.array(["x.parquet", "x.parquet"]).dictionary_encode(),
        "model": pa.array(["m", "m"], pa.large_string()),
        "image": pa.array([b"\x00", None], pa.large_binary()),
        "thumb": pa.array([b"\x01", b""], pa.binary_view()),
        "topk_labels": pa.array([[1, 2], None], pa.list_view(pa.int64())),
        "topk_label_names": pa.array([["a"], []], pa.large_list(pa.large_string())),
        "score": pa.array([0.5, None], pa.float32()),
    })
    plain = plain_types(written)
    plain.validate(full=True)
    assert [field.type for field in plain.schema] == [pa.string(), pa.string(), pa.string(), pa.binary(), pa.binary(),
                                                      pa.list_(pa.int64()), pa.list_(pa.string()), pa.float32()]
    assert plain.to_pylist() == written.to_pylist()
    assert plain_types(plain).equals(plain)  # plain columns are left as they are
