"""The table formats' commits without an engine: one version a run, never twice for one run (by its id), nothing for a
night with nothing to add or take out, old parts kept for time travel and deleted after --time-travel-days, rows
leaving by their source, and tables not ours (or lost) refused."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity
from job.night.commit import TableChange, commit_run
from job.night.formats import TableAt, TableState, format_module
from job.night.formats.by_source import Leaving
from job.output.parts import part_name
from job.night.record import Snapshot, TableFile
from storage import resolve
from tests.integration.table_scenarios import read_delta

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("error", pa.string()),
                    pa.field("source_file", pa.string())])


def write_parts(out: str, *names: str) -> None:
    for name in names:
        table = {"id": [f"{name}-0", f"{name}-1"], "error": [None, None], "source_file": [source(name)] * 2}
        pq.write_table(pa.table(table, schema=SCHEMA), f"{out}/{name}.parquet")


def source(part: str) -> str:
    """The input file a test part holds: b2 is b's next version."""
    return f"{part[0]}.in"


def change(table: dict[str, int], leaving: tuple[str, ...] = (), before: tuple[str, ...] = ()) -> TableChange:
    """The night's change: ``table`` its parts (those not ``before``: added), ``leaving`` the input files whose rows go,
    ``before`` last night's parts."""
    parts = [*table, *(f"{p}.parquet" for p in before)]
    adds = {part: rows for part, rows in table.items() if part.removesuffix(".parquet") not in before}
    return TableChange(table, {part: source(part) for part in parts}, adds, leaving=Leaving(frozenset(leaving)))


def snapshot(parts: list[str], number: int, version: int | None, retired: dict | None = None) -> Snapshot:
    files = {f"{p}.in": TableFile(f"{p}.parquet", FileIdentity(1, 1), 2, 0) for p in parts}
    return Snapshot(files, {}, None, number=number, version=version, retired=retired or {})


def ids_at(table_format: str, out: str, version: int | None = None) -> set[str]:
    if table_format == "delta":
        return set(read_delta(out, None, version).column("id").to_pylist())
    from pyiceberg.table import StaticTable

    where = f"file://{out}" if version is None else f"file://{out}/metadata/v{version}.metadata.json"
    return set(StaticTable.from_metadata(where).scan().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_run_is_one_version_committed_once_and_its_removed_parts_wait_for_time_travel(tmp_path, table_format):
    out = str(tmp_path)
    config = JobConfig(input="/nowhere/in", output=out, table_format=table_format)
    write_parts(out, "a", "b", "c")
    output = resolve(out)
    first = commit_run(output, config, None, change({"a.parquet": 2, "b.parquet": 2, "c.parquet": 2}), SCHEMA, "run-1")
    assert (first.number, first.delete, first.retired) == (1, (), {})
    before = snapshot(["a", "b", "c"], 1, first.version)
    write_parts(out, "b2", "d")
    table = {"a.parquet": 2, "b2.parquet": 2, "d.parquet": 2}
    tonight = change(table, ("b.in", "c.in"), ("a", "b", "c"))
    night = commit_run(output, config, before, tonight, SCHEMA, "run-2")
    assert night.version == first.version + 1 and set(night.retired) == {"b.parquet", "c.parquet"} and night.delete == ()
    assert ids_at(table_format, out) == {"a-0", "a-1", "b2-0", "b2-1", "d-0", "d-1"}
    assert ids_at(table_format, out, first.version) == {"a-0", "a-1", "b-0", "b-1", "c-0", "c-1"}  # time travel
    if table_format == "iceberg":  # as if that run died between its metadata file and the hint naming it
        (tmp_path / "metadata" / "version-hint.text").write_text(str(first.version))
    retried = commit_run(output, config, before, tonight, SCHEMA, "run-2-resumed")
    assert retried.version == night.version, "a run's commit was applied twice"
    assert ids_at(table_format, out) == {"a-0", "a-1", "b2-0", "b2-1", "d-0", "d-1"}  # the latest, as readers find it
    format_module(table_format).require_ours(TableAt(output, None), SCHEMA, TableState(1, first.version))
    after = snapshot(["a", "b2", "d"], 2, night.version, night.retired)
    expired = commit_run(output, JobConfig(input="/nowhere/in", output=out, table_format=table_format, time_travel_days=0),
                         after, change(table), SCHEMA, "run-3")
    assert expired.version == night.version and expired.retired == {} and expired.delete == ("b.parquet", "c.parquet")
    if table_format == "iceberg":  # a commit with no time travel keeps only its own snapshot
        write_parts(out, "e")
        later = snapshot(["a", "b2", "d"], 3, night.version)
        commit_run(output, JobConfig(input="/nowhere/in", output=out, table_format=table_format, time_travel_days=0),
                   later, change({**table, "e.parquet": 2}), SCHEMA, "run-4")
        from job.night.formats.iceberg import static_table

        assert len(static_table(output, None).metadata.snapshots) == 1


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_table_of_other_columns_is_refused_and_another_writers_commit_is_not(tmp_path, table_format):
    out = str(tmp_path)
    write_parts(out, "a", "b")
    output, module = resolve(out), format_module(table_format)
    config = JobConfig(input="/nowhere/in", output=out, table_format=table_format)
    first = commit_run(output, config, None, change({"a.parquet": 2}), SCHEMA, "run-1")
    other = pa.schema([*SCHEMA, pa.field("label", pa.int64())])
    with pytest.raises(JobError, match=f"is an? {table_format.capitalize()} table of other columns"):
        module.require_ours(TableAt(output, None), other, None)
    # Another writer's commit (numbered 41: not one of our runs): expected on a shared table, not refused.
    commit_run(output, config, snapshot(["a"], 41, first.version), change({"a.parquet": 2, "b.parquet": 2}), SCHEMA, "theirs")
    module.require_ours(TableAt(output, None), SCHEMA, TableState(1, first.version))


def test_rows_leave_by_their_source_from_a_file_another_writer_made_of_several():
    """A compaction's file holding rows of a leaving input file and of others is rewritten without the leaving rows."""
    from deltalake import DeltaTable

    import tempfile

    out = tempfile.mkdtemp()
    write_parts(out, "a", "b", "c")
    output, config = resolve(out), JobConfig(input="/nowhere/in", output=out, table_format="delta")
    first = commit_run(output, config, None, change({"a.parquet": 2, "b.parquet": 2, "c.parquet": 2}), SCHEMA, "run-1")
    DeltaTable(out).optimize.compact()  # one file of a's, b's and c's rows, named by delta-rs
    night = commit_run(output, config, snapshot(["a", "b", "c"], 1, first.version),
                       change({"a.parquet": 2, "c.parquet": 2}, ("b.in",), ("a", "b", "c")), SCHEMA, "run-2")
    assert ids_at("delta", out) == {"a-0", "a-1", "c-0", "c-1"} and night.version == first.version + 2
    # b's part left the table (compacted away): kept for time travel; a's and c's still name their input files' rows.
    assert set(night.retired) == {"b.parquet"} and night.delete == ()
    assert ids_at("delta", out, first.version + 1) == {f"{p}-{i}" for p in "abc" for i in (0, 1)}


def test_parts_are_a_new_object_per_input_version_and_other_writers_names_are_not_ours():
    from job.output.parts import is_part_name

    assert part_name("/in", "/in/x.parquet") == f"part-x-{hashlib.sha1(b'x.parquet').hexdigest()[:8]}.parquet"
    one, two = (part_name("/in", "/in/x.parquet", FileIdentity(10, t)) for t in (1, 2))
    salted = part_name("/in", "/in/x.parquet", FileIdentity(10, 1), salt="run-2")
    assert len({one, two, salted}) == 3 and one.startswith(part_name("/in", "/in/x.parquet").removesuffix(".parquet") + "-")
    assert all(is_part_name(name) for name in (one, two, salted))
    assert not any(is_part_name(name) for name in ("part-00000-c8404d6c-a3f4-45d2-b0ed-9306d3e73d1f-c000.zstd.parquet",
                                                   "part-00001-c8404d6c-a3f4-45d2-b0ed-9306d3e73d1f-c000.snappy.parquet",
                                                   "00000-0-c8404d6c-a3f4-45d2-b0ed-9306d3e73d1f.parquet"))


def test_a_glue_commit_is_applied_once_a_run_and_a_stale_writer_loses_instead_of_rebasing(s3_bucket, s3_env, monkeypatch):
    import boto3
    from pyiceberg.exceptions import CommitFailedException

    from job.night.formats.iceberg_glue import _catalog

    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", s3_env)
    database = s3_bucket.replace("-", "_")  # moto's Glue lives as long as the session's server: a database per test
    boto3.client("glue", endpoint_url=s3_env).create_database(DatabaseInput={"Name": database})
    out = f"s3://{s3_bucket}/out"
    output = resolve(out, s3_env)
    for name in ("a", "b"):
        pq.write_table(pa.table({"id": [f"{name}-0"], "error": [None], "source_file": [source(name)]}, schema=SCHEMA),
                       f"{output.path}/{name}.parquet", filesystem=output.filesystem)
    config = JobConfig(input="/nowhere/in", output=out, s3_endpoint_url=s3_env, table_format="iceberg",
                       iceberg_catalog="glue", iceberg_table=f"{database}.t")
    at, module = TableAt.of(output, config), format_module("iceberg", "glue")
    first = commit_run(output, config, None, change({"a.parquet": 1}), SCHEMA, "run-1")
    stale = _catalog(at).load_table((database, "t"))
    night = commit_run(output, config, snapshot(["a"], 1, first.version), change({"a.parquet": 1, "b.parquet": 1}), SCHEMA, "run-2")
    again = commit_run(output, config, snapshot(["a"], 1, first.version), change({"a.parquet": 1, "b.parquet": 1}), SCHEMA, "run-2")
    assert (first.version, night.version, again.version) == (0, 1, 1), "a run's commit was applied twice"
    module.require_ours(at, SCHEMA, TableState(1, first.version))  # our own commit: no conflict
    with pytest.raises(CommitFailedException):  # the table moved on: refused, not retried on top of the other commit
        stale.append(pa.table({"id": ["x-0"], "error": [None], "source_file": ["x.in"]}, schema=SCHEMA))


def test_a_delta_commit_that_conflicts_with_another_writers_reads_the_new_version_and_applies_again(tmp_path, monkeypatch):
    """OPTIMIZE commits between the night's read of the table and its commit: the commit's removes conflict (the
    compaction removed the same parts), so the night reads the compaction's version and takes b's rows out of it."""
    from deltalake import DeltaTable

    from job.night.formats import delta

    out = str(tmp_path)
    write_parts(out, "a", "b", "c")
    output, config = resolve(out), JobConfig(input="/nowhere/in", output=out, table_format="delta")
    first = commit_run(output, config, None, change({"a.parquet": 2, "b.parquet": 2, "c.parquet": 2}), SCHEMA, "run-1")
    tries, real = [], delta._commit_on

    def compacted_meanwhile(table, *args):
        tries.append(table.version())
        if len(tries) == 1:
            DeltaTable(out).optimize.compact()  # after the night read ``table``, before its commit
        return real(table, *args)

    monkeypatch.setattr(delta, "_commit_on", compacted_meanwhile)
    night = commit_run(output, config, snapshot(["a", "b", "c"], 1, first.version),
                       change({"a.parquet": 2, "c.parquet": 2}, ("b.in",), ("a", "b", "c")), SCHEMA, "run-2")
    assert tries == [first.version, first.version + 1], "the conflicting commit was not read again"
    assert ids_at("delta", out) == {"a-0", "a-1", "c-0", "c-1"} and night.version == first.version + 2
