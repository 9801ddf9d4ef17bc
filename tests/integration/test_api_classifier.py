"""``job.api.Classifier``: the plain-Python call gives the command's rows on the same images (the local baseline's)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.api import Classifier
from job.errors import JobError
from runners import local_job
from tests.common.api_rows import assert_same_rows
from tests.common.contract import read_output
from tests.common.datasets import write_mixed
from tests.common.images import encoded, photo


def test_the_classifier_gives_the_commands_rows_on_the_same_images(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    local_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "command"), "--weights", "random",
                    "--batch-size", "8", "--embeddings", "with"])
    command_rows, _ = read_output(str(tmp_path / "command"))
    images = pq.read_table(str(tmp_path / "in"))
    classify = Classifier(weights="random", batch_size=8, embeddings="with")
    table = classify(images.column("image"), ids=images.column("id").to_pylist())
    assert table.schema.equals(classify.schema)
    assert_same_rows(table.to_pylist(), command_rows)
    assert {row["id"] for row in table.to_pylist() if row["error"]} == set(bad)


def test_a_list_of_bytes_gets_positional_ids_and_bad_calls_are_one_line():
    classify = Classifier(weights="random", embeddings="only", embedding_dtype="float16")
    table = classify([encoded(photo(64, 48)), b"", encoded(photo(32, 32, seed=1))])
    assert table.column("id").to_pylist() == ["0", "1", "2"] and table.column_names == ["id", "embedding", "error"]
    embeddings = table.column("embedding").to_pylist()
    assert embeddings[1] is None and len(embeddings[0]) == 2048 and np.isfinite(embeddings[0]).all()
    assert classify([]).num_rows == 0
    with pytest.raises(JobError, match="^ids: 1 ids for 3 images"):
        classify([b"a", b"b", b"c"], ids=["x"])
    with pytest.raises(JobError, match="^weight='random': not an option of classify"):
        Classifier(weight="random")
    assert pa.types.is_float16(table.schema.field("embedding").type.value_type)
