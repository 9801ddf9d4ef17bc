"""``job.api``: the command's options as keyword arguments, and a user's rows read as the stages want them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from job.api import API_OPTIONS, api_config
from job.api.rows import chunks, ids_of, input_columns, unique_ids
from job.errors import DataError, JobError


def test_options_are_the_commands_with_its_defaults_and_checks():
    config = api_config({"weights": "random", "mean": [0.5, 0.5, 0.5], "raw_shape": [8, 8, 3]})
    assert config.mean == (0.5, 0.5, 0.5) and config.raw_shape == (8, 8, 3) and config.embeddings == "off"
    assert "input" not in API_OPTIONS and "resume" not in API_OPTIONS and "weights" in API_OPTIONS
    with pytest.raises(JobError, match="^output='s3://b/x': not an option of classify; the options are weights, "):
        api_config({"output": "s3://b/x"})
    with pytest.raises(JobError, match="^--batch-size must be positive, got 0$"):
        api_config({"batch_size": 0})


def test_rows_give_their_ids_as_strings_and_a_null_id_is_one_line():
    records = pa.table({"image": [b"a", b"b", b"c"], "id": [7, 8, 9], "other": [1, 2, 3]})
    assert ids_of(records, "id", unique_ids) == ["7", "8", "9"]
    assert len(set(ids_of(records, "name", unique_ids))) == 3  # no such column: unique ids
    with pytest.raises(DataError, match="^id column 'id' has a null at row 1 of a batch"):
        ids_of(pa.table({"id": ["x", None]}), "id", unique_ids)
    assert input_columns(records.column_names, "image", "id") == ["image", "id"]
    with pytest.raises(JobError, match="^image_column='img': the rows have no such column .they have image, id, other."):
        input_columns(records.column_names, "img", "id")
    assert [chunk.num_rows for chunk in chunks(records, 2)] == [2, 1]
