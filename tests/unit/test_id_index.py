"""The table's ids index as a run reads it: the hashes of some files, and the new hashes the table holds."""

import numpy as np
import pytest

from job.errors import JobError
from job.output import id_index
from job.output.id_index import IdIndex, write_index
from storage import resolve


def _index(tmp_path) -> tuple[IdIndex, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    hashes = {"a.parquet": rng.integers(0, 2**64, 1000, np.uint64, endpoint=False),
              "empty.parquet": np.empty(0, np.uint64),
              "b/c.parquet": rng.integers(0, 2**64, 2500, np.uint64, endpoint=False)}
    output = resolve(str(tmp_path))
    return IdIndex.read(output, write_index(output, "run-1", hashes)), hashes


def test_the_index_gives_back_each_files_hashes(tmp_path):
    index, hashes = _index(tmp_path)
    got = index.of(["b/c.parquet", "empty.parquet", "not-in-the-table.parquet"])
    assert list(got) == ["b/c.parquet", "empty.parquet"]  # the index's order: its files sorted
    for name, values in got.items():
        assert np.array_equal(values, np.sort(hashes[name]))


@pytest.mark.parametrize("chunk", [7, id_index.SEARCH_CHUNK])  # a search over several chunks finds the same
def test_held_finds_the_new_hashes_only_in_the_files_asked(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(id_index, "SEARCH_CHUNK", chunk)
    index, hashes = _index(tmp_path)
    in_a, in_c = hashes["a.parquet"][[5, 999]], hashes["b/c.parquet"][[0, 17, 2499]]
    fresh = np.concatenate([in_a, in_c, in_c[:1], np.array([1, 2, 3], np.uint64)])  # a repeat, and hashes nobody holds
    held = index.held(fresh, ["a.parquet", "b/c.parquet", "empty.parquet"])
    assert list(held) == ["a.parquet", "b/c.parquet"]
    assert np.array_equal(held["a.parquet"], np.sort(in_a)) and np.array_equal(held["b/c.parquet"], np.sort(in_c))
    assert list(index.held(fresh, ["b/c.parquet"])) == ["b/c.parquet"]  # a file not asked about is not answered
    assert index.held(np.array([1, 2], np.uint64), ["a.parquet"]) == {}
    assert index.held(np.empty(0, np.uint64), ["a.parquet"]) == {}


def test_an_unreadable_index_is_one_line_naming_it_and_the_fix(tmp_path):
    output = resolve(str(tmp_path))
    (tmp_path / "_index").mkdir()
    (tmp_path / "_index" / "bad.ids").write_bytes(b"not parquet")
    with pytest.raises(JobError, match=r"_index/bad.ids: the table's id index cannot be read .*--overwrite"):
        IdIndex.read(output, "_index/bad.ids")


def test_an_index_of_the_earlier_id_hash_is_made_again_from_its_parts(tmp_path, capsys):
    """Version 1 of the id hash depended on the longest id beside an id; an index without the version record is
    remade from the parts it names (a part gone is left out: its file runs again), in this version's hash."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from job.input.unique_ids import ID_HASH_VERSION, id_hashes

    output = resolve(str(tmp_path))
    pq.write_table(pa.table({"id": ["a-1", "a-2-with-a-longer-name"]}), str(tmp_path / "part-a.parquet"))
    old = pa.table({"input_file": ["a.parquet", "gone.parquet"],
                    "hashes": pa.array([[1, 2], [3]], pa.list_(pa.uint64()))})  # no version in its metadata
    pq.write_table(old, str(tmp_path / "old.ids"))
    index = IdIndex.read(output, "old.ids")
    assert index.hash_version == 1 and IdIndex.read(output, write_index(output, "run-2", {})).hash_version == ID_HASH_VERSION
    remade = index.remade(output, {"a.parquet": "part-a.parquet", "gone.parquet": "part-gone.parquet"}, ids_as_text=True)
    expected = np.sort(id_hashes(pa.array(["a-1", "a-2-with-a-longer-name"]), True)[0])
    assert remade.files == ["a.parquet"] and np.array_equal(remade.of(["a.parquet"])["a.parquet"], expected)
    assert "written with an earlier id hash" in capsys.readouterr().err


def test_an_ids_hash_does_not_depend_on_the_ids_beside_it():
    """The same id hashes the same alone, beside a longer id, and in any layout: a repeat across files is a repeat."""
    import pyarrow as pa

    from job.input.unique_ids import id_hashes

    alone = id_hashes(pa.array(["img-3-1"]), True)[0][0]
    beside = id_hashes(pa.array(["img-140-1-and-more-than-sixteen-bytes", "img-3-1"]), True)[0][1]
    assert alone == beside
    assert id_hashes(pa.array(["img-3-1", "img-3-2"]), True)[0][0] != id_hashes(pa.array(["img-3-2"]), True)[0][0]
