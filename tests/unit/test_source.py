"""Input planning: files, row counts, --limit, ids, and clear refusals before any work.

``plan_input`` wires ``job.input.data_files`` and ``job.input.dataset_check`` (unit-tested on their own in
test_dataset_check.py); these tests hold the plan to what those checks decided.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.config import JobConfig
from job.input.damaged import damaged_row_group
from job.errors import DataError, JobError
from job.input.plan import read_file
from job.prepare import plan_input
from storage import resolve
from tests.common.damage import garble_page


def write(path, rows: int, start: int = 0, with_id: bool = True, image_column: str = "image", ids: list | None = None):
    columns = {image_column: pa.array([b"x%d" % i for i in range(start, start + rows)], pa.binary())}
    if with_id:
        columns["id"] = pa.array(ids if ids is not None else [f"id-{i}" for i in range(start, start + rows)], pa.string())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, row_group_size=4)


def plan(path, **options):
    return plan_input(resolve(str(path)), JobConfig(input=str(path), output="/tmp/unused-out", **options))


def test_plans_files_in_order_with_row_counts_and_limit(tmp_path):
    write(tmp_path / "b.parquet", 5, start=10)
    write(tmp_path / "a.parquet", 7)
    (tmp_path / "_SUCCESS").write_text("")  # writers' companions are not data
    full = plan(tmp_path)
    assert [f.path.rsplit("/", 1)[1] for f in full.files] == ["a.parquet", "b.parquet"] and full.rows == 12
    limited = plan(tmp_path, limit=9)
    assert [(f.path.rsplit("/", 1)[1], f.rows) for f in limited.files] == [("a.parquet", 7), ("b.parquet", 2)]
    batches = [ids for file in limited.files for ids, _ in read_file(limited, file, batch_rows=3)]
    assert sum(batches, []) == [f"id-{i}" for i in range(7)] + ["id-10", "id-11"]


def test_ids_default_to_the_path_under_input_and_row_index(tmp_path):
    write(tmp_path / "part.parquet", 5, with_id=False)
    write(tmp_path / "date=1" / "part.parquet", 2, with_id=False)  # one name in two folders: distinct ids all the same
    write(tmp_path / "date=2" / "part.parquet", 3, with_id=False)
    planned = plan(tmp_path)
    assert planned.id_column is None
    ids = [[i for ids, _ in read_file(planned, file, batch_rows=2) for i in ids] for file in planned.files]
    assert ids == [["date=1/part.parquet:0", "date=1/part.parquet:1"], [f"date=2/part.parquet:{i}" for i in range(3)],
                   [f"part.parquet:{i}" for i in range(5)]]  # directly under --input: "<file name>:<row>", as ever
    one_file = plan(tmp_path / "date=2" / "part.parquet")  # --input naming the file itself: its name
    assert [i for ids, _ in read_file(one_file, one_file.files[0], batch_rows=4) for i in ids] == ids[2][:3]


def test_missing_image_column_names_the_columns_and_option(tmp_path):
    write(tmp_path / "a.parquet", 2, image_column="img")
    with pytest.raises(JobError, match=r"a.parquet: no column 'image' \(columns: img, id\); every file needs the image column: "
                                       r"pass --image-column"):
        plan(tmp_path)
    assert plan(tmp_path, image_column="img").rows == 2


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "no such file or prefix"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("hi")), "not a Parquet file"),
        (lambda p: p.mkdir(), "no Parquet files under this prefix"),
        (lambda p: write(p / "empty.parquet", 0), "the input has no rows"),
    ],
)
def test_unusable_inputs_are_refused(tmp_path, make, message):
    make(tmp_path / "in")
    with pytest.raises(JobError, match=message):
        plan(tmp_path / "in")


def test_partition_folders_are_planned_and_files_without_rows_planned_empty_in_one_line(tmp_path, capsys):
    write(tmp_path / "date=2026-11-01" / "part-0.parquet", 3)
    write(tmp_path / "date=2026-11-02" / "part-0.parquet", 2, start=3)
    write(tmp_path / "date=2026-11-02" / "part-1.parquet", 0)
    (tmp_path / "date=2026-11-02" / "_SUCCESS").write_text("")
    (tmp_path / "_temporary" / "0").mkdir(parents=True)  # a writer's leftovers: never data
    write(tmp_path / "_temporary" / "0" / "part-9.parquet", 2)
    planned = plan(tmp_path)
    names = [f.path.split("/", len(str(tmp_path).split("/")))[-1] for f in planned.files]
    assert names == ["date=2026-11-01/part-0.parquet", "date=2026-11-02/part-0.parquet", "date=2026-11-02/part-1.parquet"]
    assert [f.rows for f in planned.files] == [3, 2, 0] and planned.rows == 5  # the empty file is a file of the table
    assert capsys.readouterr().err == (f"input: 1 files without rows ({tmp_path}/date=2026-11-02/part-1.parquet): "
                                       "nothing to run, their parts are empty\n")


def test_ids_repeated_across_files_are_refused_unless_the_check_is_skipped(tmp_path):
    write(tmp_path / "a.parquet", 3, ids=["k1", "k2", "k3"])
    write(tmp_path / "b.parquet", 2, ids=["k4", "k2"])
    with pytest.raises(JobError, match=r"ids in column 'id' are not unique: 'k2' is at .*a.parquet row 1, .*b.parquet row 1 "):
        plan(tmp_path)
    assert plan(tmp_path, skip_id_check=True).rows == 5  # trusted: the final check is the only one left
    assert plan(tmp_path, limit=4).rows == 4  # the repeat lies past --limit: not part of this run


def test_a_file_lacking_the_id_column_is_refused_naming_it(tmp_path):
    write(tmp_path / "a.parquet", 2)
    write(tmp_path / "b.parquet", 2, start=2, with_id=False)
    with pytest.raises(JobError, match=r"b.parquet: no id column 'id', which .*a.parquet has; .*--id-column"):
        plan(tmp_path)


def test_a_damaged_page_stops_the_read_naming_the_file_and_its_rows(tmp_path):
    """Footer fine, one page garbled: the rows before it are read, then one DataError line says where and what to do."""
    write(tmp_path / "a.parquet", 10)
    assert garble_page(str(tmp_path / "a.parquet"), None, row_group=1) == (4, 7)
    planned = plan(tmp_path)
    read = []
    with pytest.raises(DataError) as stopped:
        for ids, _ in read_file(planned, planned.files[0], batch_rows=2):
            read += ids
    assert read == ["id-0", "id-1", "id-2", "id-3"]
    assert str(stopped.value).startswith(f"{tmp_path}/a.parquet: row group 1 (rows 4-7) cannot be read (")
    assert str(stopped.value).endswith("): the file is damaged (its footer reads, a page does not): rewrite it from its "
                                       "source, or move it out of --input; then run again with --resume, which keeps the "
                                       "parts committed so far")
    assert "\n" not in str(stopped.value)


def test_damage_is_told_from_memory_for_raw_pixels_and_dictionary_ids(tmp_path):
    """The row group is decoded again from the bytes fetched for it alone: every layout must decode from those."""
    pixels = pa.array([[i % 256] * 12 for i in range(10)], pa.list_(pa.uint8()))
    table = pa.table({"image": pixels, "id": [f"id-{i}" for i in range(10)], "height": [2] * 10, "width": [2] * 10,
                      "channels": [3] * 10})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=4, use_dictionary=["id"], compression="zstd")
    location = resolve(str(tmp_path))
    columns = ["image", "id", "height", "width", "channels"]
    assert damaged_row_group(location, str(tmp_path / "a.parquet"), 0, 10, columns) is None
    garble_page(str(tmp_path / "a.parquet"), None, row_group=2)
    assert damaged_row_group(location, str(tmp_path / "a.parquet"), 6, 4, columns).startswith(
        f"{tmp_path}/a.parquet: row group 2 (rows 8-9) cannot be read (")


def test_a_damaged_id_page_is_refused_before_any_work(tmp_path):
    write(tmp_path / "a.parquet", 10)
    garble_page(str(tmp_path / "a.parquet"), None, row_group=2, column="id")
    with pytest.raises(JobError, match=r"a.parquet: row group 2 \(rows 8-9\) cannot be read \(.*\): the file is damaged"):
        plan(tmp_path)


def test_an_intact_row_group_is_not_taken_for_damage(tmp_path):
    """A read that failed but reads now was the store's moment, not the file's: the store's error stands."""
    write(tmp_path / "a.parquet", 10)
    assert damaged_row_group(resolve(str(tmp_path)), str(tmp_path / "a.parquet"), 2, 4, ["image", "id"]) is None


def test_a_null_id_the_footers_did_not_count_stops_the_read_naming_its_row(tmp_path):
    """--skip-id-check and a writer without statistics: nothing before the run can see the null; the reader says where."""
    columns = {"image": pa.array([b"x"] * 5, pa.binary()), "id": pa.array(["a", "b", "c", None, "e"], pa.string())}
    pq.write_table(pa.table(columns), tmp_path / "a.parquet", write_statistics=False)
    planned = plan(tmp_path, skip_id_check=True)
    with pytest.raises(DataError) as stopped:
        list(read_file(planned, planned.files[0], batch_rows=2))
    assert str(stopped.value) == (f"{tmp_path}/a.parquet row 3: its id (column 'id') is null; every row needs an id, which "
                                  "names its output row: fill the ids in, or pass --id-column naming a column without nulls "
                                  "(one the files lack gives '<path relative to --input>:<row>' ids); then run again with --resume, which "
                                  "keeps the parts committed so far")
