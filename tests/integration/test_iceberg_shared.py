"""An Iceberg table other writers commit to (the embedded catalog, no engine): a night's commit applied on the latest
version, rows removed by their source wherever compaction moved them, a lost race applied again on the winner's
version, --overwrite one version readers never fail to read, and a hint or metadata folder broken by hand."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.errors import JobError
from job.night.formats import Commit, TableAt, TableState, iceberg
from job.night.formats.by_source import Leaving
from job.night.formats.iceberg_change import RUN_PROPERTY
from job.output.rows import SOURCE, stored_schema
from storage import resolve

SCHEMA = stored_schema(pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("error", pa.string())]), True)


def _rows(source: str, rows: int, tag: str = "") -> pa.Table:
    """Rows of input file ``source``: ids ``<source>-<i><tag>``, in the parts' schema (field ids as the job writes)."""
    now = datetime.now(timezone.utc)
    return pa.table({"id": [f"{source}-{i}{tag}" for i in range(rows)], "error": [None] * rows, SOURCE: [source] * rows,
                     "run_id": ["r"] * rows, "model": ["m"] * rows, "made_at": [now] * rows}, schema=SCHEMA)


def part(out: str, source: str, rows: int = 2, tag: str = "") -> tuple[str, int]:
    """A part of input file ``source`` in the local table ``out``."""
    name = f"part-{source}{tag}.parquet"
    pq.write_table(_rows(source, rows, tag), f"{out}/{name}")
    return name, rows


def change(number: int, adds: list[tuple[str, int]], leaving: tuple[str, ...] = (), overwrite: bool = False,
           schema: pa.Schema = SCHEMA) -> Commit:
    return Commit(dict(adds), Leaving(frozenset(leaving)), schema, number, f"run-{number}", 7.0, overwrite)


def ids(out: str) -> list[str]:
    return sorted(iceberg.static_table(resolve(out), None).scan().to_arrow().column("id").to_pylist())


def at(out: str) -> TableAt:
    return TableAt(resolve(out), None)


def another_writer(out: str, write) -> None:
    """Another pyiceberg writer of the table: ``write(table)`` committed on the latest version, published the way a
    Hadoop catalog publishes (the next ``v<N>.metadata.json``, then the hint)."""
    from pyiceberg.catalog.sql import SqlCatalog

    version = iceberg.latest_version(resolve(out))
    catalog = SqlCatalog("theirs", uri="sqlite:///:memory:")
    catalog.create_namespace("db")
    table = catalog.register_table(("db", "t"), f"file://{out}/metadata/v{version}.metadata.json")
    write(table)
    written = catalog.load_table(("db", "t")).metadata_location.removeprefix("file://")
    Path(written).rename(f"{out}/metadata/v{version + 1}.metadata.json")
    with open(f"{out}/metadata/version-hint.text", "w") as hint:
        hint.write(str(version + 1))


def compact(table) -> None:
    """Compaction as maintenance does it: every data file's rows rewritten into one new file."""
    table.overwrite(table.scan().to_arrow())


@pytest.fixture()
def table(tmp_path) -> str:
    """A table of two nights: input files a, b (night 1) and c (night 2)."""
    out = str(tmp_path)
    assert iceberg.commit(at(out), change(1, [part(out, "a"), part(out, "b")])).version == 1
    assert iceberg.commit(at(out), change(2, [part(out, "c")])).version == 2
    return out


def test_an_add_only_night_is_an_append_and_a_night_applied_twice_is_committed_once(table):
    latest = iceberg.static_table(resolve(table), None)
    assert [s.summary.operation.value for s in latest.metadata.snapshots] == ["append", "append"]
    assert latest.metadata.current_snapshot().summary.additional_properties[RUN_PROPERTY] == "2"
    assert iceberg.commit(at(table), change(2, [part(table, "c")])).again
    assert ids(table) == ["a-0", "a-1", "b-0", "b-1", "c-0", "c-1"] and iceberg.latest_version(resolve(table)) == 2
    # The parts carry the table's field ids: a reader that finds columns by id (not by name mapping) reads them.
    data_file = latest.scan().plan_files()[0].file.file_path.removeprefix("file://")
    assert pq.read_schema(data_file).field(SOURCE).metadata[b"PARQUET:field_id"] == \
        str(latest.schema().find_field(SOURCE).field_id).encode()


def test_a_replaced_input_files_rows_leave_wherever_another_writers_compaction_moved_them(table):
    another_writer(table, compact)  # a, b and c now lie in one file the other writer made
    applied = iceberg.commit(at(table), change(3, [part(table, "b", tag="v2")], leaving=("b",)))
    assert ids(table) == ["a-0", "a-1", "b-0v2", "b-1v2", "c-0", "c-1"]
    assert applied.version == 4 and len(applied.removed) == 1 and applied.removed[0].startswith("data/")


def test_another_writers_delete_and_append_are_kept_by_the_next_night(table):
    another_writer(table, lambda t: t.delete("id == 'a-0'"))  # a privacy request
    another_writer(table, lambda t: t.append(_their_rows()))  # another job's backfill
    applied = iceberg.commit(at(table), change(3, [part(table, "d")], leaving=("c",)))
    assert ids(table) == ["a-1", "b-0", "b-1", "d-0", "d-1", "theirs"]
    assert applied.removed == ("part-c.parquet",)


def _their_rows() -> pa.Table:
    now = datetime.now(timezone.utc)
    return pa.table({"id": ["theirs"], "error": [None], SOURCE: ["elsewhere"], "run_id": ["x"], "model": ["x"],
                     "made_at": [now]}, schema=SCHEMA)


@pytest.mark.parametrize("theirs", ["delete", "append", "compact"])
def test_another_writers_commit_between_our_read_and_our_put_is_rebased_over(table, theirs, monkeypatch):
    writes = {"delete": lambda t: t.delete("id == 'a-0'"), "append": lambda t: t.append(_their_rows()), "compact": compact}
    prepare, raced = iceberg._prepare, []

    def racing(*args):
        prepared = prepare(*args)  # our v3 computed from v2 ...
        if not raced:
            raced.append(True)
            another_writer(table, writes[theirs])  # ... and theirs published as v3 first
        return prepared

    monkeypatch.setattr(iceberg, "_prepare", racing)
    applied = iceberg.commit(at(table), change(3, [part(table, "b", tag="v2")], leaving=("b",)))
    expected = {"a-0", "a-1", "c-0", "c-1", "b-0v2", "b-1v2"}
    expected = {"delete": expected - {"a-0"}, "append": expected | {"theirs"}, "compact": expected}[theirs]
    assert applied.version == 4 and set(ids(table)) == expected and len(ids(table)) == len(expected)
    kept = sorted(path.name for path in Path(table, "metadata").glob("*.metadata.json"))
    assert kept == [f"v{n}.metadata.json" for n in range(1, 5)], "the losing try's metadata file was kept"


def test_a_true_conflict_is_refused_in_one_line_naming_the_other_commit(table):
    from pyiceberg.types import StringType

    another_writer(table, lambda t: t.update_schema().add_column("theirs", StringType()).commit())
    with pytest.raises(JobError, match=r"snapshot \d+ .* changed the table's columns .* pass --overwrite"):
        iceberg.commit(at(table), change(3, [part(table, "d")]))


def test_an_overwrite_is_one_version_a_polling_reader_never_fails_to_read(table):
    failures, reads, stop = [], [], threading.Event()

    def reader():
        from pyiceberg.table import StaticTable

        while not stop.is_set():
            try:  # as readers find the latest version: through the hint
                reads.append(len(StaticTable.from_metadata(f"file://{table}").scan().to_arrow()))
            except Exception as e:  # noqa: BLE001 - any failed read is what this test counts
                failures.append(repr(e))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for night in range(3, 9):
            applied = iceberg.commit(at(table), change(night, [part(table, "n", tag=str(night))], overwrite=True))
            assert applied.version == night
    finally:
        stop.set()
        thread.join()
    assert failures == [] and len(reads) > 5 and set(reads) <= {6, 2}
    assert ids(table) == ["n-08", "n-18"]
    snapshot = iceberg.static_table(resolve(table), None).metadata.current_snapshot()
    assert snapshot.summary.operation.value == "overwrite"


def test_an_overwrite_with_other_columns_is_one_version_of_the_new_schema(table):
    wide = stored_schema(pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("label", pa.int64()),
                                    pa.field("error", pa.string())]), True)
    now = datetime.now(timezone.utc)
    pq.write_table(pa.table({"id": ["w"], "label": [3], "error": [None], SOURCE: ["w"], "run_id": ["r"], "model": ["m"],
                             "made_at": [now]}, schema=wide), f"{table}/wide.parquet")
    assert iceberg.commit(at(table), change(3, [("wide.parquet", 1)], overwrite=True, schema=wide)).version == 3
    rows = iceberg.static_table(resolve(table), None).scan().to_arrow()
    assert rows.column_names == wide.names and rows.column("label").to_pylist() == [3]


@pytest.mark.parametrize("hint", [b"", b"garbage\n", b"1"])
def test_an_empty_garbage_or_stale_hint_is_no_traceback_and_the_next_commit_repairs_it(table, hint):
    Path(table, "metadata", "version-hint.text").write_bytes(hint)
    iceberg.require_ours(at(table), SCHEMA, TableState(2, 2))
    assert iceberg.commit(at(table), change(3, [part(table, "d")])).version == 3
    assert Path(table, "metadata", "version-hint.text").read_text() == "3"
    assert len(ids(table)) == 8


def test_a_table_whose_metadata_is_gone_is_refused_naming_overwrite(table):
    import shutil

    shutil.rmtree(f"{table}/metadata")
    with pytest.raises(JobError, match="has no metadata/v<N>.metadata.json now; pass --overwrite"):
        iceberg.require_ours(at(table), SCHEMA, TableState(2, 2))
    iceberg.require_ours(at(table), SCHEMA, None)  # no run of ours recorded it: a new table may be made there


def test_a_table_whose_latest_metadata_is_unreadable_is_refused_naming_overwrite(table):
    Path(table, "metadata", "v2.metadata.json").write_bytes(b"{not json")
    with pytest.raises(JobError, match=r"metadata/v2.metadata.json cannot be read \(.*\); pass --overwrite"):
        iceberg.require_ours(at(table), SCHEMA, TableState(2, 2))
    with pytest.raises(JobError, match="cannot be read"):  # nor is a night committed on it
        iceberg.commit(at(table), change(3, [part(table, "d")]))
    redone = iceberg.commit(at(table), change(3, [part(table, "d")], overwrite=True))  # --overwrite: a new table
    assert redone.version == 3 and ids(table) == ["d-0", "d-1"]


def test_a_glue_commit_is_applied_once_a_run_and_another_writers_glue_commit_meanwhile_is_rebased_over(
        s3_bucket, s3_env, monkeypatch):
    import boto3

    from job.night.formats import iceberg_glue

    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", s3_env)
    database = s3_bucket.replace("-", "_")  # moto's Glue lives as long as the session's server: a database per test
    boto3.client("glue", endpoint_url=s3_env).create_database(DatabaseInput={"Name": database})
    output = resolve(f"s3://{s3_bucket}/out", s3_env)
    glue = TableAt(output, s3_env, "glue", f"{database}.t")

    def s3_part(source: str) -> tuple[str, int]:
        name = f"part-{source}.parquet"
        pq.write_table(_rows(source, 2), f"{output.path}/{name}", filesystem=output.filesystem)
        return name, 2

    assert iceberg_glue.commit(glue, change(1, [s3_part("a"), s3_part("b")])).version == 0
    assert iceberg_glue.commit(glue, change(1, [s3_part("a"), s3_part("b")])).again
    commit_once, raced = iceberg_glue._commit_once, []

    def racing(catalog, at_, current, change_, number):
        if not raced:  # another writer's UpdateTable lands after our read of the table, before ours
            raced.append(True)
            iceberg_glue._catalog(glue).load_table((database, "t")).append(_their_rows())
        return commit_once(catalog, at_, current, change_, number)

    monkeypatch.setattr(iceberg_glue, "_commit_once", racing)
    applied = iceberg_glue.commit(glue, change(2, [s3_part("b2")], leaving=("b",)))
    table = iceberg_glue._catalog(glue).load_table((database, "t"))
    assert raced and applied.version == 2 and applied.removed == ("part-b.parquet",)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == ["a-0", "a-1", "b2-0", "b2-1", "theirs"]
    iceberg_glue.require_ours(glue, SCHEMA, TableState(2, applied.version))
    iceberg_glue._catalog(glue).drop_table((database, "t"))  # the Glue entry deleted by hand
    with pytest.raises(JobError, match="Glue has no such table now, and run 2 committed version 2 of it; pass --overwrite"):
        iceberg_glue.require_ours(glue, SCHEMA, TableState(2, applied.version))


def test_the_parts_field_ids_are_those_iceberg_gives_a_new_table_of_their_columns():
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.schema import index_name_by_id

    from job.night.formats.iceberg_change import iceberg_schema
    from job.output.rows import ERROR_FIELD, ID_FIELD, PREDICTION_FIELDS, embedding_field

    columns = pa.schema([ID_FIELD, *PREDICTION_FIELDS, embedding_field("float32", 4), ERROR_FIELD])
    parts = stored_schema(columns, in_table=True)
    assert pa.types.is_list(parts.field("embedding").type)  # Delta and Iceberg declare a list: the parts hold one
    assert index_name_by_id(pyarrow_to_schema(parts)) == index_name_by_id(iceberg_schema(parts))
