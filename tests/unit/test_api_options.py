"""``job.api``: the command's options as keyword arguments, refusals in the API's words, a user's rows read as the
stages want them, and the Ray call's actors fitted to a small cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from job.api import API_OPTIONS, api_config
from job.api.columns import BINARY, IMAGE_STRUCT, LIST, TENSOR, kind_of, stage_records
from job.api.options import in_python_words
from job.api.rows import chunks, ids_of, input_columns, unique_ids
from job.errors import DataError, JobError


def test_options_are_the_commands_with_its_defaults_and_checks_in_python_words():
    config = api_config({"weights": "random", "mean": [0.5, 0.5, 0.5], "raw_shape": [8, 8, 3]})
    assert config.mean == (0.5, 0.5, 0.5) and config.raw_shape == (8, 8, 3) and config.embeddings == "off"
    assert "input" not in API_OPTIONS and "resume" not in API_OPTIONS and "weights" in API_OPTIONS
    with pytest.raises(JobError, match="^output='s3://b/x': not an option of classify; the options are weights, "):
        api_config({"output": "s3://b/x"})
    with pytest.raises(JobError, match="^batch_size=0 must be positive, got 0$"):
        api_config({"batch_size": 0})
    with pytest.raises(JobError, match="^batch_size='8': expected an integer, or None$"):
        api_config({"batch_size": "8"})
    with pytest.raises(JobError, match="^raw_shape='8,8,3': expected a tuple of 3 integers, or None$"):
        api_config({"raw_shape": "8,8,3"})
    with pytest.raises(JobError, match="^weights: a bytes: expected a string, or None$"):
        api_config({"weights": b"s3://key:secret@b/x.pt"})
    assert api_config({"weights": Path("/models/pets.pt")}).weights == "/models/pets.pt"
    # A URL is quoted as the message has it (redacted), never from the options; flags of no API option stay.
    assert in_python_words("--weights s3://***@b/x.pt: credentials in a URL are refused", {"weights": "s3://k:s@b/x.pt"}) \
        == "weights='s3://***@b/x.pt': credentials in a URL are refused"
    assert in_python_words("--output x lies in --input y", {}) == "--output x lies in --input y"


def test_the_image_column_is_found_by_its_type_when_not_named():
    schema = pa.schema([("path", pa.string()), ("content", pa.binary())])
    assert api_config({}, schema).image_column == "content"  # Spark's binaryFile, Ray's read_binary_files (bytes)
    assert api_config({"image_column": "content"}, schema).image_column == "content"
    with pytest.raises(JobError, match=r"^image_column='image': the rows have no such column, and several that hold images \(a, b\)"):
        api_config({}, pa.schema([("a", pa.binary()), ("b", pa.binary())]))
    with pytest.raises(JobError, match="^image_column='path' has type string"):
        api_config({"image_column": "path"}, schema)
    tensor = pa.fixed_shape_tensor(pa.float32(), [4, 4, 3])
    with pytest.raises(JobError, match="^image_column='image' holds tensors of float; the job reads uint8 pixels"):
        api_config({}, pa.schema([("image", tensor)]))
    assert [kind_of(t) for t in (pa.large_binary(), pa.list_(pa.uint8()), pa.fixed_shape_tensor(pa.uint8(), [2, 2]),
                                 pa.struct([("height", pa.int32()), ("width", pa.int32()), ("nChannels", pa.int32()),
                                            ("data", pa.binary())]), pa.string())] == [BINARY, LIST, TENSOR, IMAGE_STRUCT, None]


def test_a_grayscale_tensor_is_one_channel_and_rgba_loses_its_alpha():
    gray = pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(12, dtype=np.uint8).reshape(1, 3, 4))
    rgba = pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(8, dtype=np.uint8).reshape(1, 1, 2, 4))
    table = stage_records(pa.table({"image": gray}), "image")
    assert table.column("image")[0].as_py() == bytes(range(12)) and table.select(["height", "width", "channels"]).to_pylist() \
        == [{"height": 3, "width": 4, "channels": 1}]
    assert stage_records(pa.table({"image": rgba}), "image").column("image")[0].as_py() == bytes([0, 1, 2, 4, 5, 6])


def test_rows_give_their_ids_as_strings_and_a_null_id_is_one_line():
    records = pa.table({"image": [b"a", b"b", b"c"], "id": [7, 8, 9], "other": [1, 2, 3]})
    assert ids_of(records, "id", unique_ids) == ["7", "8", "9"]
    assert len(set(ids_of(records, "name", unique_ids))) == 3  # no such column: unique ids
    with pytest.raises(DataError, match="^id column 'id' has a null at row 1 of a batch"):
        ids_of(pa.table({"id": ["x", None]}), "id", unique_ids)
    assert input_columns(records.column_names, "image", "id") == ["image", "id"]
    assert [chunk.num_rows for chunk in chunks(records, 2)] == [2, 1]
