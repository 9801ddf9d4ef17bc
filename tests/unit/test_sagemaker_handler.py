"""The container contract called directly: model_fn -> input_fn -> predict_fn -> output_fn."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.config import JobConfig
from job.output.rows import output_schema
from runners.sagemaker.serving import codecs, handler
from job.stages import Classify, Preprocess
from tests.common.datasets import BAD_REASONS, mixed_rows
from tests.common.plans import cpu_execution
from tests.common.sagemaker import packaged_model_dir, shard_body


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    model_dir = packaged_model_dir(str(tmp_path_factory.mktemp("pkg")), topk=3)
    return handler.model_fn(model_dir)


def test_round_trip_matches_the_shared_stages(model):
    rows = mixed_rows(good=2)
    data = handler.input_fn(shard_body(rows), codecs.PARQUET)
    body, content_type = handler.output_fn(handler.predict_fn(data, model), codecs.PARQUET)
    got = pq.read_table(io.BytesIO(body))
    assert content_type == codecs.PARQUET and got.schema.equals(output_schema(model.execution), check_metadata=False)
    assert got.column("id").to_pylist() == [i for i, _ in rows]
    # The same rows through Preprocess/Classify as Ray calls them: the handler adds nothing.
    config = JobConfig(input=None, output=None, weights="random", topk=3, decode="cpu")
    pixels = Preprocess(config, cpu_execution(config))([i for i, _ in rows], pa.table({"image": pa.array([d for _, d in rows], pa.binary())}))
    expected = Classify(config, cpu_execution(config))(pixels).to_pylist()
    for mine, theirs in zip(got.to_pylist(), expected):
        assert mine["topk_labels"] == theirs["topk_labels"] and mine["error"] == theirs["error"]
        if theirs["topk_scores"] is not None:
            np.testing.assert_allclose(mine["topk_scores"], theirs["topk_scores"], atol=1e-4)
    errors = {r["id"]: r["error"] for r in got.to_pylist() if r["error"]}
    assert {f"bad-{name}" for name in BAD_REASONS} == set(errors)


def test_unknown_content_type_is_a_named_error(model):
    with pytest.raises(codecs.UnsupportedContentTypeError, match="text/csv.*application/x-parquet"):
        handler.input_fn(b"a,b\n", "text/csv")
    with pytest.raises(codecs.UnsupportedContentTypeError, match="accept 'application/json'"):
        handler.output_fn(output_schema(model.execution).empty_table(), "application/json")


def test_undecodable_body_and_missing_column(model):
    with pytest.raises(codecs.UndecodableInputError, match="not a Parquet file"):
        handler.input_fn(b"definitely not parquet", "application/x-parquet; charset=binary")
    with pytest.raises(codecs.UndecodableInputError, match="no 'image' column"):
        handler.predict_fn(pa.table({"id": ["a"], "pixels": [b"x"]}), model)
    with pytest.raises(codecs.UndecodableInputError, match="image column has type int64"):
        handler.predict_fn(pa.table({"id": ["a"], "image": [1]}), model)
