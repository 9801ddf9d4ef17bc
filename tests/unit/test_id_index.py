"""The table's ids index as runs write and read it: segments a night adds, the new hashes the table holds, merges."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.errors import JobError
from job.ids.hashing import ID_HASH_VERSION, id_hashes
from job.ids import bloom
from job.ids import segment as id_segment
from job.ids.index import IdIndex, index_files, write_index
from storage import resolve

RNG = np.random.default_rng(7)


def random_hashes(n: int) -> np.ndarray:
    return RNG.integers(0, 2**64, n, np.uint64, endpoint=False)


def _index(tmp_path) -> tuple[IdIndex, dict[str, np.ndarray]]:
    hashes = {"a.parquet": random_hashes(1000), "empty.parquet": np.empty(0, np.uint64), "b/c.parquet": random_hashes(2500)}
    output = resolve(str(tmp_path))
    return IdIndex.read(output, write_index(output, "run-1", hashes)), hashes


@pytest.mark.parametrize("rows_per_group", [7, id_segment.ROWS_PER_GROUP])  # many row groups, each read only if asked
def test_held_finds_the_new_hashes_only_in_the_files_asked(tmp_path, monkeypatch, rows_per_group):
    monkeypatch.setattr(id_segment, "ROWS_PER_GROUP", rows_per_group)
    index, hashes = _index(tmp_path)
    in_a, in_c = hashes["a.parquet"][[5, 999]], hashes["b/c.parquet"][[0, 17, 2499]]
    fresh = np.concatenate([in_a, in_c, in_c[:1], np.array([1, 2, 3], np.uint64)])  # a repeat, and hashes nobody holds
    held = index.held(fresh, ["a.parquet", "b/c.parquet", "empty.parquet"])
    assert list(held) == ["a.parquet", "b/c.parquet"]
    assert np.array_equal(held["a.parquet"], np.sort(in_a)) and np.array_equal(held["b/c.parquet"], np.sort(in_c))
    assert list(index.held(fresh, ["b/c.parquet"])) == ["b/c.parquet"]  # a file not asked about is not answered
    assert index.held(np.array([1, 2], np.uint64), ["a.parquet"]) == {}
    assert index.held(np.empty(0, np.uint64), ["a.parquet"]) == {}
    assert index.held(hashes["a.parquet"], ["a.parquet"])["a.parquet"].size == 1000  # every row group holding one


def test_a_night_adds_a_segment_whose_files_replace_their_older_rows(tmp_path):
    """Night 2 redoes a.parquet (new ids), adds d.parquet and drops b/c.parquet: each file's ids are its newest
    segment's (a run asks only about the files its table keeps, so b/c's rows wait for a merge to drop them)."""
    index, hashes = _index(tmp_path)
    redone, added = random_hashes(10), random_hashes(20)
    segments = index.extended("run-2", ["a.parquet", "empty.parquet", "d.parquet"], {"a.parquet": redone, "d.parquet": added})
    assert segments == ["_index/run-1.ids", "_index/run-2.ids"]  # 30 new rows: the 3,500 before stay where they are
    night = IdIndex.read(index.output, segments[-1])
    everything = np.concatenate([*hashes.values(), redone, added])
    held = night.held(everything, ["a.parquet", "empty.parquet", "d.parquet"])
    assert np.array_equal(held["a.parquet"], np.sort(redone)) and np.array_equal(held["d.parquet"], np.sort(added))
    assert list(night.held(hashes["a.parquet"], ["a.parquet", "d.parquet"])) == []  # a's ids before it was redone


def test_the_newest_segments_merge_when_they_grow_and_the_merge_keeps_only_live_rows(tmp_path, monkeypatch):
    index, hashes = _index(tmp_path)  # 3,500 rows
    second = index.extended("run-2", ["a.parquet", "b/c.parquet", "d.parquet"], {"d.parquet": random_hashes(1000)})
    assert second == ["_index/run-1.ids", "_index/run-2.ids"]  # 3,500 > 2 x 1,000: kept apart
    redone = random_hashes(1500)
    third = IdIndex.read(index.output, second[-1]).extended("run-3", ["b/c.parquet", "d.parquet"], {"d.parquet": redone})
    assert third == ["_index/run-3.ids"]  # 1,000 <= 2 x 1,500, then 3,500 <= 2 x 2,500: one segment
    merged = IdIndex.read(index.output, third[-1])
    assert len(merged.segments) == 1 and merged.segments[0].rows == 2500 + 1500  # a.parquet and d's old ids dropped
    held = merged.held(np.concatenate([*hashes.values(), redone]), ["a.parquet", "b/c.parquet", "d.parquet"])
    assert list(held) == ["b/c.parquet", "d.parquet"] and np.array_equal(held["d.parquet"], np.sort(redone))
    assert index_files(third) == {"_index/run-3.ids", "_index/run-3.bloom", "_index/run-3.files"}


def test_an_unreadable_index_is_one_line_naming_it_and_the_fix(tmp_path):
    output = resolve(str(tmp_path))
    (tmp_path / "_index").mkdir()
    (tmp_path / "_index" / "bad.ids").write_bytes(b"not parquet")
    with pytest.raises(JobError, match=r"_index/bad.ids: the table's id index cannot be read .*--overwrite"):
        IdIndex.read(output, "_index/bad.ids")
    pq.write_table(pa.table({"x": [1]}), str(tmp_path / "_index" / "other.ids"))
    with pytest.raises(JobError, match=r"_index/other.ids: the table's id index cannot be read .*--overwrite"):
        IdIndex.read(output, "_index/other.ids")


def test_a_segments_files_lie_beside_it_not_in_its_footer_and_one_written_before_still_reads(tmp_path):
    """``<run>.files`` lists the segment's input files; a segment of the layout before it (its files in its footer's
    JSON, no ``.files``) reads the same, and the next night writes its own segment the new way."""
    import json

    index, hashes = _index(tmp_path)
    ids_path = tmp_path / "_index" / "run-1.ids"
    record = json.loads(pq.read_schema(ids_path).metadata[id_segment.SEGMENT_KEY.encode()])
    assert "files" not in record and record["file_count"] == 3
    assert pq.read_table(tmp_path / "_index" / "run-1.files").column("file").to_pylist() == ["a.parquet", "b/c.parquet", "empty.parquet"]

    table = pq.read_table(ids_path)  # as a segment was written before: its files in the footer
    before = {key: value for key, value in record.items() if key != "file_count"} | {"files": ["a.parquet", "b/c.parquet", "empty.parquet"]}
    metadata = {**table.schema.metadata, id_segment.SEGMENT_KEY.encode(): json.dumps(before).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), ids_path, row_group_size=id_segment.ROWS_PER_GROUP)
    (tmp_path / "_index" / "run-1.files").unlink()
    old = IdIndex.read(index.output, "_index/run-1.ids")
    assert old.files == ["a.parquet", "b/c.parquet", "empty.parquet"]
    assert np.array_equal(old.held(hashes["b/c.parquet"][:3], ["b/c.parquet"])["b/c.parquet"], np.sort(hashes["b/c.parquet"][:3]))
    added = random_hashes(5)
    night = IdIndex.read(index.output, old.extended("run-2", ["a.parquet", "b/c.parquet", "d.parquet"], {"d.parquet": added})[-1])
    assert [segment.files for segment in night.segments] == [("a.parquet", "b/c.parquet", "empty.parquet"), ("d.parquet",)]
    assert (tmp_path / "_index" / "run-2.files").exists() and list(night.held(added, ["d.parquet"])) == ["d.parquet"]


@pytest.mark.parametrize("damage", ["gone", "other"])
def test_a_segment_whose_files_are_gone_or_others_is_refused_naming_them(tmp_path, damage):
    _index(tmp_path)
    files = tmp_path / "_index" / "run-1.files"
    if damage == "gone":
        files.unlink()
    else:
        pq.write_table(pa.table({"file": ["a.parquet"]}), files)
    with pytest.raises(JobError, match=r"_index/run-1.files: the table's id index cannot be read .*--overwrite"):
        IdIndex.read(resolve(str(tmp_path)), "_index/run-1.ids")


def test_an_index_of_the_earlier_layout_is_read_whole_and_written_again_as_a_segment(tmp_path):
    """One Parquet row per file (input_file, hashes), as the index was before segments."""
    output = resolve(str(tmp_path))
    a, b = random_hashes(4), random_hashes(3)
    old = pa.table({"input_file": ["a.parquet", "b.parquet"], "hashes": pa.array([np.sort(a), np.sort(b)], pa.list_(pa.uint64()))},
                   metadata={"id_hash": str(ID_HASH_VERSION)})
    pq.write_table(old, str(tmp_path / "old.ids"))
    index = IdIndex.read(output, "old.ids")
    assert index.hash_version == ID_HASH_VERSION and np.array_equal(index.held(a, ["a.parquet"])["a.parquet"], np.sort(a))
    segments = index.extended("run-2", ["a.parquet", "b.parquet"], {})
    assert segments == ["_index/run-2.ids"]  # the old file is no segment of the new index
    again = IdIndex.read(output, segments[-1])
    assert np.array_equal(again.held(np.concatenate([a, b]), ["a.parquet", "b.parquet"])["b.parquet"], np.sort(b))


def test_an_index_of_the_earlier_id_hash_is_made_again_from_its_parts(tmp_path, capsys):
    """Version 1 of the id hash depended on the longest id beside an id; an index without the version record is
    remade from the parts it names (a part gone is left out: its file runs again), in this version's hash."""
    output = resolve(str(tmp_path))
    pq.write_table(pa.table({"id": ["a-1", "a-2-with-a-longer-name"]}), str(tmp_path / "part-a.parquet"))
    old = pa.table({"input_file": ["a.parquet", "gone.parquet"],
                    "hashes": pa.array([[1, 2], [3]], pa.list_(pa.uint64()))})  # no version in its metadata
    pq.write_table(old, str(tmp_path / "old.ids"))
    index = IdIndex.read(output, "old.ids")
    assert index.hash_version == 1 and IdIndex.read(output, write_index(output, "run-2", {})).hash_version == ID_HASH_VERSION
    remade = index.remade({"a.parquet": "part-a.parquet", "gone.parquet": "part-gone.parquet"}, ids_as_text=True)
    expected = np.sort(id_hashes(pa.array(["a-1", "a-2-with-a-longer-name"]), True)[0])
    assert remade.files == ["a.parquet"] and np.array_equal(remade.held(expected, ["a.parquet"])["a.parquet"], expected)
    assert "written with an earlier id hash" in capsys.readouterr().err


def test_the_filter_never_misses_a_hash_it_holds_and_lets_few_others_through():
    held, absent = random_hashes(200_000), random_hashes(200_000)
    words = bloom.build(held)
    assert len(words) == bloom.words_for(len(held)) and bloom.may_hold(words, held).all()
    assert bloom.may_hold(words, absent).mean() < 0.01
    integers = np.arange(50_000, dtype=np.uint64)  # integer ids hash to their values: mixed before use
    assert bloom.may_hold(bloom.build(integers), integers + np.uint64(50_000)).mean() < 0.01
    assert not bloom.may_hold(bloom.build(np.empty(0, np.uint64)), held).any()


def test_an_ids_hash_does_not_depend_on_the_ids_beside_it():
    """The same id hashes the same alone, beside a longer id, and in any layout: a repeat across files is a repeat."""
    alone = id_hashes(pa.array(["img-3-1"]), True)[0][0]
    beside = id_hashes(pa.array(["img-140-1-and-more-than-sixteen-bytes", "img-3-1"]), True)[0][1]
    assert alone == beside
    assert id_hashes(pa.array(["img-3-1", "img-3-2"]), True)[0][0] != id_hashes(pa.array(["img-3-2"]), True)[0][0]


def test_a_segment_of_files_in_any_order_is_the_same_and_hashes_must_match_their_files():
    """A run's parts come in the plan's order (sorted: no sort of a million names); any other order sorts them."""
    from job.ids.hashes_by_file import HashesByFile

    hashes = {"a.parquet": random_hashes(3), "b/c.parquet": random_hashes(0), "d.parquet": random_hashes(5)}
    in_order = id_segment.Segment.of(HashesByFile.of(hashes))
    shuffled = id_segment.Segment.of(HashesByFile.of({name: hashes[name] for name in ["d.parquet", "a.parquet", "b/c.parquet"]}))
    assert in_order.files == shuffled.files == ("a.parquet", "b/c.parquet", "d.parquet")
    for built in (in_order, shuffled):
        sorted_hashes, owners = built.loaded
        assert np.array_equal(sorted_hashes, np.sort(np.concatenate(list(hashes.values()))))
        assert {built.files[o] for o, h in zip(owners, sorted_hashes) if h in hashes["d.parquet"]} == {"d.parquet"}
    with pytest.raises(ValueError, match="2 names, 2 sizes summing to 3 for 4 hashes"):
        HashesByFile(("a", "b"), np.array([1, 2]), random_hashes(4))
