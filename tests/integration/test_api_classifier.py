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


@pytest.fixture(scope="module")
def classify() -> Classifier:
    return Classifier(weights="random", batch_size=8)


def test_a_table_gives_the_commands_rows_on_the_same_images(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    local_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "command"), "--weights", "random",
                    "--batch-size", "8", "--embeddings", "with"])
    command_rows, _ = read_output(str(tmp_path / "command"))
    classify = Classifier(weights="random", batch_size=8, embeddings="with")
    table = classify(pq.read_table(str(tmp_path / "in")))  # its image and id columns, no argument
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
    assert pa.types.is_float16(table.schema.field("embedding").type.value_type)
    with pytest.raises(JobError, match="^ids: 1 ids for 3 images"):
        classify([b"a", b"b", b"c"], ids=["x"])
    with pytest.raises(JobError, match="^images: an array of string; the job reads image bytes"):
        classify(["cat.jpg"])
    with pytest.raises(JobError, match="^weight='random': not an option of classify"):
        Classifier(weight="random")
    with pytest.raises(JobError, match=r"^decode='gpu' decodes encoded images; raw pixels \(raw_shape=\(8, 8, 3\)\) .*use decode='cpu'$"):
        Classifier(weights="random", decode="gpu", raw_shape=(8, 8, 3))


def test_repeated_ids_are_refused_as_the_command_refuses_them(classify):
    with pytest.raises(JobError, match=r"^ids: ids are not unique: 'a' is at row 0, row 2 \(1 ids repeat, 1 rows too many\)"):
        classify([b"x", b"y", b"z"], ids=["a", "b", "a"])
    with pytest.raises(JobError, match=r"^id_column='id': ids are not unique: 'b' is at row 1, row 2"):
        classify(pa.table({"image": [b"x", b"y", b"z"], "id": ["a", "b", "b"]}))


def test_tensors_and_sparks_image_struct_are_pixels_without_raw_shape(classify):
    """A uint8 tensor (fixed or variable shape, alpha dropped) and Spark's BGR struct give the same rows as the pixels."""
    pixels = np.asarray(photo(64, 48))  # (48, 64, 3)
    rgba = np.concatenate([pixels, np.full((48, 64, 1), 255, np.uint8)], axis=2)
    fixed = pa.FixedShapeTensorArray.from_numpy_ndarray(np.stack([pixels, pixels]))
    struct = pa.array([{"origin": "file:/a.png", "height": 48, "width": 64, "nChannels": 4, "mode": 24,
                        "data": rgba[:, :, [2, 1, 0, 3]].tobytes()}])
    expected = Classifier(weights="random", batch_size=8, raw_shape=(48, 64, 3))([pixels.tobytes()])
    for table in (classify(pa.table({"pixels": fixed, "id": ["a", "b"]})), classify(pa.table({"image": struct}))):
        assert table.column("error").to_pylist() == [None] * table.num_rows
        assert set(table.column("label").to_pylist()) == {expected.column("label")[0].as_py()}
        assert np.allclose(table.column("score").to_pylist(), expected.column("score")[0].as_py(), atol=1e-5)
    with pytest.raises(JobError, match=r"^image_column='image' holds lists of uint8 \(raw pixels\) and the rows give no shape"):
        classify(pa.table({"image": pa.array([[1, 2, 3]], pa.list_(pa.uint8()))}))


def test_several_models_in_one_call_give_each_models_own_rows(tmp_path):
    from tests.common.api_rows import TWO_MODELS, assert_each_models_rows

    write_mixed(str(tmp_path / "in"))
    table = pq.read_table(str(tmp_path / "in"))
    tables = Classifier(models=TWO_MODELS, batch_size=8)(table)  # each image decoded once for both
    assert_each_models_rows([t.to_pylist() for t in tables],
                            [Classifier(**entry, batch_size=8)(table).to_pylist() for entry in TWO_MODELS])
    with pytest.raises(JobError, match="weights= with models=: each model's own options go in its entry"):
        Classifier(models=TWO_MODELS, weights="random")
