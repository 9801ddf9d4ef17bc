"""Dataset-level checks before any work: listing, footers that disagree, repeated ids; local and S3."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.input.data_files import list_data_files
from job.input.dataset_check import check_dataset
from job.errors import JobError
from job.ids.hashing import id_hashes
from storage import Location, resolve


@pytest.fixture
def root(data_root) -> Location:
    """An empty input prefix, on a local path or on the moto S3 server (``data_root``, tests/conftest.py)."""
    base, endpoint = data_root
    return resolve(f"{base}/in", endpoint)


def put_table(root: Location, name: str, table: pa.Table) -> None:
    root.filesystem.create_dir(root.join(name).rsplit("/", 1)[0], recursive=True)
    with root.filesystem.open_output_stream(root.join(name)) as out:
        pq.write_table(table, out, row_group_size=3)


def put_bytes(root: Location, name: str, data: bytes = b"") -> None:
    root.filesystem.create_dir(root.join(name).rsplit("/", 1)[0], recursive=True)
    with root.filesystem.open_output_stream(root.join(name)) as out:
        out.write(data)


def images(ids: list, id_column: str | None = "id", image_type: pa.DataType = pa.binary()) -> pa.Table:
    columns = {"image": pa.array([b"jpeg"] * len(ids), image_type) if image_type != pa.int64() else pa.array(range(len(ids)))}
    if id_column:
        columns[id_column] = pa.array(ids)
    return pa.table(columns)


def check(root: Location, **options):
    defaults = {"image_column": "image", "id_column": "id", "raw_shape": None}
    return check_dataset(root, list_data_files(root), **{**defaults, **options})


def relative(root: Location, paths: list[str]) -> list[str]:
    return [p[len(root.path) + 1 :] for p in paths]


def test_nested_partitions_are_read_and_writers_companions_skipped(root):
    put_table(root, "date=2026-11-01/part-0.parquet", images(["a", "b"]))
    put_table(root, "date=2026-11-02/part-1.parquet", images(["c"]))
    for companion in ("_SUCCESS", "_committed_123", "date=2026-11-01/_started_123", ".part-0.parquet.crc",
                      "part-0.parquet.crc", "_temporary/0/part-9.parquet", ".hive-staging/x.parquet", "_metadata"):
        put_bytes(root, companion, b"not parquet")
    assert relative(root, list_data_files(root)) == ["date=2026-11-01/part-0.parquet", "date=2026-11-02/part-1.parquet"]
    report = check(root)
    assert report.rows == 3 and report.ids_checked == 3 and report.columns.id_column == "id"


def test_listing_a_single_file_and_refusing_what_holds_no_data(root):
    put_table(root, "only.parquet", images(["a"]))
    single = Location(root.filesystem, root.join("only.parquet"), root.uri + "/only.parquet")
    assert list(list_data_files(single)) == [single.path]
    missing = Location(root.filesystem, root.join("nothing"), root.uri + "/nothing")
    with pytest.raises(JobError, match="no such file or prefix; check --input"):
        list_data_files(missing)
    put_bytes(root, "companions/_SUCCESS")
    companions = Location(root.filesystem, root.join("companions"), root.uri + "/companions")
    with pytest.raises(JobError, match="no Parquet files under this prefix; check --input"):
        list_data_files(companions)


@pytest.mark.parametrize("log", ["_delta_log", "_spark_metadata"])
def test_a_table_log_is_refused_not_read_around(root, log):
    put_table(root, "part-0.parquet", images(["a"]))
    put_bytes(root, f"{log}/00000.json", b"{}")
    with pytest.raises(JobError, match=rf"in: is a .*\({log}/\).*point --input at a Parquet export"):
        list_data_files(root)


def test_a_parquet_link_to_nothing_is_refused_by_name_not_skipped(tmp_path):
    """Symbolic links exist only on local paths; a hidden one, like any hidden name, is still left out."""
    root = resolve(str(tmp_path / "in"))
    put_table(root, "a.parquet", images(["a"]))
    (tmp_path / "in" / "b.parquet").symlink_to(tmp_path / "moved" / "b.parquet")
    (tmp_path / "in" / ".c.parquet").symlink_to(tmp_path / "moved" / "c.parquet")
    (tmp_path / "in" / "date=1").mkdir()
    (tmp_path / "in" / "date=1" / "d.parquet").symlink_to(tmp_path / "moved" / "d.parquet")
    with pytest.raises(JobError) as refused:
        list_data_files(root)
    assert str(refused.value) == (f"{tmp_path}/in/b.parquet: a symbolic link to {tmp_path}/moved/b.parquet, which does "
                                  "not exist (and 1 more); fix or remove it: every Parquet file under --input is read")
    (tmp_path / "in" / "b.parquet").unlink()
    (tmp_path / "in" / "date=1" / "d.parquet").unlink()
    assert relative(root, list_data_files(root)) == ["a.parquet"]


def test_a_file_that_is_not_parquet_is_refused_by_name(root):
    put_table(root, "a.parquet", images(["a"]))
    put_bytes(root, "notes.txt", b"hello")
    with pytest.raises(JobError, match=r"notes.txt: not a Parquet file .*move it out of --input"):
        check(root)


def test_a_file_without_the_id_column_is_refused_naming_it_and_the_fix(root):
    put_table(root, "a.parquet", images(["a", "b"]))
    put_table(root, "b.parquet", images(["c"], id_column=None))
    with pytest.raises(JobError, match=r"b.parquet: no id column 'id', which .*a.parquet has; .*--id-column .*'<path relative to --input>:<row>'"):
        check(root)


def test_an_id_column_only_later_files_have_is_refused(root):
    put_table(root, "a.parquet", images(["a"], id_column=None))
    put_table(root, "b.parquet", images(["b"]))
    with pytest.raises(JobError, match=r"a.parquet: no id column 'id', which .*b.parquet has"):
        check(root)


def test_an_image_column_of_the_wrong_type_is_refused(root):
    put_table(root, "a.parquet", images(["a"]))
    put_table(root, "b.parquet", images(["b"], image_type=pa.int64()))
    with pytest.raises(JobError, match=r"b.parquet: column 'image' is int64, expected encoded image bytes.*--image-column"):
        check(root)


def test_an_image_column_missing_from_a_later_file_is_refused(root):
    put_table(root, "a.parquet", images(["a"]))
    put_table(root, "b.parquet", pa.table({"img": [b"x"], "id": ["b"]}))
    with pytest.raises(JobError, match=r"b.parquet: no column 'image' \(columns: img, id\), which .*a.parquet has"):
        check(root)


def test_ids_repeated_across_files_are_refused_naming_the_id_files_and_rows(root):
    put_table(root, "a.parquet", images(["x", "dup", "y"]))
    put_table(root, "b.parquet", images(["z", "w", "v", "dup"]))
    with pytest.raises(JobError) as refused:
        check(root)
    message = str(refused.value)
    assert "'dup' is at " in message and "a.parquet row 1" in message and "b.parquet row 3" in message
    assert "1 ids repeat, 1 rows too many" in message and "--id-column" in message and "\n" not in message


def test_ids_repeated_within_a_file_are_refused(root):
    put_table(root, "a.parquet", images([f"id-{i}" for i in range(10)] + ["id-4"]))
    with pytest.raises(JobError, match=r"'id-4' is at .*a.parquet row 4, .*a.parquet row 10"):
        check(root)


def test_integer_and_text_ids_are_compared_as_the_output_writes_them(root):
    put_table(root, "a.parquet", images([1, 7, 9]))
    put_table(root, "b.parquet", images(["7"]))
    with pytest.raises(JobError, match=r"'7' is at"):
        check(root)
    put_table(root, "b.parquet", images([70]))
    assert check(root).ids_checked == 4


def test_the_skip_switch_and_limit_leave_unread_duplicates_alone(root):
    put_table(root, "a.parquet", images(["a", "b", "c"]))
    put_table(root, "b.parquet", images(["d", "a"]))
    assert check(root, check_ids=False).ids_checked is None
    limited = check(root, limit=4)  # the repeated "a" is row 5: never run
    assert limited.ids_checked == 4 and [rows for _, rows in limited.files] == [3, 1]


NULL_ID = ("its id (column 'id') is null{}; every row needs an id, which names its output row: fill the ids in, or pass "
           "--id-column naming a column without nulls (one the files lack gives '<path relative to --input>:<row>' ids)")


def test_a_null_id_is_refused_naming_its_file_and_row(root):
    """No stand-in name for a null id is safe from colliding with a real one: refused, before any work."""
    put_table(root, "a.parquet", images(["a", "b", "c"]))
    put_table(root, "b.parquet", images(["a.parquet:0", None, "d", None]))
    with pytest.raises(JobError) as refused:
        check(root)
    assert str(refused.value) == f"{root.uri_of(root.join('b.parquet'))} row 1: " + NULL_ID.format(" (2 rows in 1 files have none)")
    assert check(root, limit=4).ids_checked == 4  # the nulls lie past --limit: never run


def test_without_the_id_check_the_footers_null_counts_refuse_null_ids(root):
    put_table(root, "a.parquet", images(["a", "b", "c", "d", None]))
    with pytest.raises(JobError) as refused:
        check(root, check_ids=False)
    assert str(refused.value) == f"{root.uri_of(root.join('a.parquet'))} row 4: " + NULL_ID.format("")
    assert check(root, check_ids=False, limit=4).ids_checked is None  # past --limit
    with root.filesystem.open_output_stream(root.join("a.parquet")) as out:  # a writer that records no statistics
        pq.write_table(images(["a", None]), out, write_statistics=False)
    assert check(root, check_ids=False).rows == 2  # left to the reader, which stops the run at the null (job.input.plan)


def test_files_without_rows_are_left_out(root):
    put_table(root, "a.parquet", images(["a"]))
    put_table(root, "b.parquet", images([], id_column=None).cast(pa.schema([("image", pa.binary())])))
    put_bytes(root, "c.parquet", b"")  # a 0-byte object: a writer's placeholder
    report = check(root)
    assert relative(root, [p for p, _ in report.files]) == ["a.parquet"]
    assert relative(root, list(report.empty)) == ["b.parquet", "c.parquet"]


def test_an_input_of_only_empty_files_has_nothing_to_do(root):
    put_bytes(root, "c.parquet", b"")
    with pytest.raises(JobError, match="the input has no rows; nothing to do"):
        check(root)


def test_positional_ids_are_unique_by_construction_so_files_of_one_name_pass(root):
    put_table(root, "date=1/part-0.parquet", images(["a"], id_column=None))
    put_table(root, "date=2/part-0.parquet", images(["b", "c"], id_column=None))
    report = check(root)
    assert (report.columns.id_column, report.rows, report.ids) == (None, 3, None)  # nothing to read: ids name their path


def test_raw_pixels_need_uint8_lists_and_shape_columns_in_every_file(root):
    pixels = pa.array([[1, 2, 3]], pa.list_(pa.uint8()))
    shape = {"height": [1], "width": [1], "channels": [3]}
    put_table(root, "a.parquet", pa.table({"image": pixels, "id": ["a"], **shape}))
    put_table(root, "b.parquet", pa.table({"image": pa.array([[1, 2, 3]], pa.list_(pa.int64())), "id": ["b"], **shape}))
    with pytest.raises(JobError, match=r"b.parquet: column 'image' is list<[a-z]+: int64>, expected image bytes .*or raw pixels"):
        check(root)
    put_table(root, "b.parquet", pa.table({"image": pixels, "id": ["b"]}))
    with pytest.raises(JobError, match=r"b.parquet: column 'height' is missing, .*or pass --raw-shape"):
        check(root)
    assert check(root, raw_shape=(1, 1, 3)).rows == 2  # one shape for every row: no per-row columns needed


def test_id_hashes_agree_across_layouts_and_differ_between_ids():
    words = ["", "a", "a\0", "ab", "ba", "id-1", "id-10", "x" * 300]
    hashes, valid = id_hashes(pa.array(words), as_text=True)
    assert len(set(hashes.tolist())) == len(words) and valid.all()
    for layout in (pa.array(["q", *words]).slice(1), pa.array(words).dictionary_encode(),
                   pa.array(words, pa.large_string()), pa.array(words, pa.string_view())):
        assert id_hashes(layout, as_text=True)[0].tolist() == hashes.tolist()
    assert id_hashes(pa.array([7, None]), as_text=True)[0][0] == id_hashes(pa.array(["7"]), as_text=True)[0][0]


def test_many_small_files_hashed_together_give_each_file_its_own_digest_nulls_and_repeats(tmp_path):
    """Small files' ids are hashed a group at a time (unique_ids._groups): each file's digest, its null rows and a
    repeat across groups come out as when every file is hashed alone; a dictionary column among them too."""
    from job.ids.hashing import ids_digest

    root = resolve(str(tmp_path / "in"))
    ids = {f"part-{i:03d}.parquet": [f"img-{i}-{j}" for j in range(3)] for i in range(150)}  # 3 groups of 64
    for name, values in ids.items():
        column = pa.array(values).dictionary_encode() if name == "part-070.parquet" else pa.array(values)
        put_table(root, name, pa.table({"image": pa.array([b"jpeg"] * 3), "id": column}))
    report = check(root)
    assert report.ids.ids == 450
    for name, values in ids.items():
        assert report.ids.digests[root.join(name)] == ids_digest(id_hashes(pa.array(values), True)[0]), name
    put_table(root, "part-140.parquet", images(["img-140-0", None, "img-140-2"]))
    with pytest.raises(JobError, match=r"part-140.parquet row 1: its id \(column 'id'\) is null"):
        check(root)
    put_table(root, "part-140.parquet", images(["img-3-1", "img-140-1", "img-140-2"]))  # img-3-1 is in the first group
    with pytest.raises(JobError, match=r"'img-3-1' is at .*part-003.parquet row 1, .*part-140.parquet row 0"):
        check(root)
