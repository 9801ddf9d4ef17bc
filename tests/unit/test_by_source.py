"""Rows leaving a shared table by their lineage: input files by name, object groups by the key range they held, in
whatever types the table's other writers wrote (job.night.formats.by_source)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.errors import JobError
from job.night.formats.iceberg_change import require_no_deletes
from job.night.formats.by_source import DataFile, Leaving, rewrite_without, sources_of, sources_within, split
from job.output.rows import SOURCE
from storage import resolve

LEAVING = Leaving(frozenset({"b.parquet", "@img-10.jpg"}), (("img-10.jpg", "img-20.jpg"), ("img-90.jpg", None)))


def test_a_row_leaves_by_its_files_name_or_its_objects_key_range():
    assert [LEAVING.holds(s) for s in ("b.parquet", "@img-10.jpg", "img-10.jpg", "img-19.jpg", "img-20.jpg", "img-95.jpg",
                                       "a.parquet", None)] == [True, True, True, True, False, True, False, False]
    sources = pa.array(["b.parquet", "img-15.jpg", "img-25.jpg", None, "img-99.jpg"], pa.string())
    assert LEAVING.mask(sources).to_pylist() == [True, True, False, False, True]
    assert not Leaving() and Leaving(ranges=(("a", "b"),))


def test_statistics_rule_a_file_out_only_when_no_leaving_source_can_lie_within_its_bounds():
    assert DataFile("x", "img-21.jpg", "img-89.jpg").may_hold(LEAVING) is False
    assert DataFile("x", "img-19.jpg", "img-21.jpg").may_hold(LEAVING) is True
    assert DataFile("x", "a.parquet", "c.parquet").may_hold(LEAVING) is True  # b.parquet lies between
    assert DataFile("x").may_hold(LEAVING) is True  # no statistics: it may


def written(tmp_path, name: str, sources: list[str | None], type_: pa.DataType) -> str:
    """A data file another writer made, its source column in ``type_`` (as Arrow will read it back)."""
    table = pa.table({"id": [f"id-{i}" for i in range(len(sources))], SOURCE: pa.array(sources, pa.string()).cast(type_)})
    pq.write_table(table, tmp_path / name)
    return name


def test_files_in_other_writers_types_are_sorted_read_and_rewritten_in_the_tables_types(tmp_path):
    location = resolve(str(tmp_path))
    for type_ in (pa.string_view(), pa.large_string(), pa.dictionary(pa.int32(), pa.string())):
        mixed = written(tmp_path, "mixed.parquet", ["a.parquet", "b.parquet", "img-12.jpg", None], type_)
        whole = written(tmp_path, "whole.parquet", ["b.parquet", "img-11.jpg"], type_)
        assert pq.read_schema(tmp_path / mixed).field(SOURCE).type == type_
        files = [DataFile(mixed), DataFile(whole), DataFile("ours.parquet", "c.parquet", "c.parquet")]
        taken = split(files, {"ours.parquet": "c.parquet"}, LEAVING, lambda path: sources_of(location, path))
        assert (taken.whole, taken.mixed) == (("whole.parquet",), ("mixed.parquet",))
        assert sources_within(location, files[:2], LEAVING.ranges) == {"img-11.jpg", "img-12.jpg"}
        schema = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field(SOURCE, pa.string())])
        name, rows = rewrite_without(location, mixed, LEAVING, "run", schema)
        staying = pq.read_table(tmp_path / name)
        assert rows == 2 and staying.schema == schema and staying.column(SOURCE).to_pylist() == ["a.parquet", None]


def test_an_iceberg_night_that_must_rewrite_a_file_with_delete_files_is_refused_naming_them():
    """Merge-on-read deletes apply to a data file the night would read as it is: refused, never resurrected."""
    files = [DataFile("data/theirs.parquet"), DataFile("part-ours.parquet", "c.parquet", "c.parquet"),
             DataFile("data/elsewhere.parquet", "a.parquet", "a.parquet")]
    known = {"part-ours.parquet": "c.parquet"}
    require_no_deletes("s3://b/t", {"part-ours.parquet", "data/elsewhere.parquet"}, files, known, LEAVING)  # none read
    with pytest.raises(JobError, match=r"^s3://b/t: this night must take rows out of data/theirs.parquet, which other "
                                       r"writers deleted rows of through delete files \(merge-on-read\)"):
        require_no_deletes("s3://b/t", {"data/theirs.parquet"}, files, known, LEAVING)
