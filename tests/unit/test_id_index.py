"""The table's ids index as a run reads it: the hashes of some files, and the new hashes the table holds."""

import numpy as np
import pytest

from job.errors import JobError
from job.output import id_index
from job.output.id_index import IdIndex
from job.output.table import write_index
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
