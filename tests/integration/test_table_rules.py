"""A shared Delta table's own rules, on the local engine (a local path, and the S3 server where the store matters).

The platform adds them after the job made the table: CHECK constraints (``alter.add_constraint``), NOT NULL columns
and column invariants (a metadata commit, as Spark's ALTER TABLE writes one), ``delta.appendOnly``, writer features
(row tracking, column mapping, deletion vectors). A night keeps each or is refused in one line naming it: before any
work (exit 2) where the plan already breaks it, after the run and before the commit (exit 3, nothing committed) where
only the rows can. A VACUUM that deletes the night's files before its commit ends it in exit 4, named as such, and the
next night finishes the table.
"""

from __future__ import annotations

import json
import time

import pytest
from deltalake import DeltaTable, TableFeatures

from job.night import finish
from job.cli import run_main
from runners import local_job
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.privacy_scenarios import compact, holds_what_a_fresh_run_writes
from tests.integration.table_scenarios import delta_options

LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


def night_one(root: str, endpoint: str | None = None) -> tuple[str, list[str]]:
    """A Delta table of three input files (ids img-00000..8); returns its prefix and the nights' arguments."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", "delta")
    main(args)
    return out, args


def table(out: str, endpoint: str | None = None) -> DeltaTable:
    return DeltaTable(out, storage_options=delta_options(endpoint))


def failed(argv: list[str], capsys, code: int) -> str:
    """Run a night as its command does: ``code`` and one error line, no traceback; the line."""
    capsys.readouterr()
    assert run_main(main, argv) == code
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.endswith(errors[0] + "\n") and "Traceback" not in err, err
    return errors[0].removeprefix("error: ")


def commit_metadata(out: str, change) -> None:
    """Commit a new metadata action by hand, as Spark's ALTER TABLE does (delta-rs has no call for NOT NULL or an
    invariant): ``change(schema_fields, configuration)`` edits the current ones in place."""
    current = table(out)
    metadata = current.metadata()
    fields = json.loads(current.schema().to_json())["fields"]
    configuration = dict(metadata.configuration)
    change(fields, configuration)
    action = {"metaData": {"id": metadata.id, "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps({"type": "struct", "fields": fields}),
                           "partitionColumns": list(metadata.partition_columns), "configuration": configuration,
                           "createdTime": metadata.created_time}}
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES"}}
    with open(f"{out}/_delta_log/{current.version() + 1:020d}.json", "x") as log:
        log.write(json.dumps(info) + "\n" + json.dumps(action) + "\n")


def field(fields: list[dict], name: str) -> dict:
    return next(f for f in fields if f["name"] == name)


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_check_constraint_the_rows_break_is_refused_naming_it_and_nothing_is_committed(where, tmp_path, request, capsys):
    endpoint = request.getfixturevalue("s3_env") if where == "s3" else None
    root = f"s3://{request.getfixturevalue('s3_bucket')}" if where == "s3" else str(tmp_path)
    out, args = night_one(root, endpoint)
    table(out, endpoint).alter.add_constraint({"ours": "id LIKE 'img-%'"})
    write_night(f"{root}/in", endpoint, 3, 1, prefix="new")
    version = table(out, endpoint).version()
    line = failed(args, capsys, 3)
    assert "3 of the night's rows break the Delta table's CHECK ours (id LIKE 'img-%') (e.g. id 'new-00009')" in line
    assert "nothing was committed" in line and table(out, endpoint).version() == version
    table(out, endpoint).alter.drop_constraint("ours")
    main([*args, "--resume"])  # the rule dropped: the night's parts commit as they are
    assert sorted(table(out, endpoint).to_pyarrow_table().column("id").to_pylist())[-3:] == ["new-00009", "new-00010", "new-00011"]


def test_a_check_constraint_the_rows_keep_lets_the_night_commit(tmp_path):
    out, args = night_one(str(tmp_path))
    table(out).alter.add_constraint({"labelled": "label >= 0 AND score <= 1"})
    write_night(str(tmp_path / "in"), None, 3, 1)
    main(args)
    assert table(out).to_pyarrow_table().num_rows == 12


@pytest.mark.parametrize("rule, expected", [
    (lambda fields, _: field(fields, "error").update(nullable=False), "break the Delta table's NOT NULL error"),
    (lambda fields, _: field(fields, "label").update(metadata={"delta.invariants": json.dumps(
        {"expression": {"expression": "label < 0"}})}), "break the Delta table's invariant on label (label < 0)"),
])
def test_not_null_columns_and_invariants_are_held_to_the_nights_rows(rule, expected, tmp_path, capsys):
    out, args = night_one(str(tmp_path))
    commit_metadata(out, rule)
    write_night(str(tmp_path / "in"), None, 3, 1)
    assert expected in failed(args, capsys, 3)


def test_an_append_only_table_refuses_a_night_that_must_take_rows_out_before_any_work(tmp_path, capsys):
    out, args = night_one(str(tmp_path))
    table(out).alter.set_table_properties({"delta.appendOnly": "true"})
    write_night(str(tmp_path / "in"), None, 3, 1)
    main(args)  # a night that only adds is an append: the rule allows it
    write_night(str(tmp_path / "in"), None, 1, 1, prefix="new")  # part-00001 replaced: its old rows must go
    version = table(out).version()
    line = failed(args, capsys, 2)
    assert line.startswith(f"{out} is append-only (delta.appendOnly=true), and this night must take rows out of it")
    assert "conflict" not in line and table(out).version() == version


@pytest.mark.parametrize("feature", ["RowTracking", "DomainMetadata"])
def test_a_writer_feature_the_commit_cannot_honour_is_refused_before_any_work(feature, tmp_path, capsys):
    out, args = night_one(str(tmp_path))
    table(out).alter.add_feature(getattr(TableFeatures, feature), allow_protocol_versions_increase=True)
    write_night(str(tmp_path / "in"), None, 3, 1)
    name = feature[0].lower() + feature[1:]
    assert failed(args, capsys, 2).startswith(f"{out} is a Delta table requiring the writer feature {name}, which")


def test_column_mapping_by_name_is_refused_before_any_work(tmp_path, capsys):
    out, args = night_one(str(tmp_path))
    commit_metadata(out, lambda fields, configuration: configuration.update({"delta.columnMapping.mode": "name"}))
    write_night(str(tmp_path / "in"), None, 3, 1)
    assert failed(args, capsys, 2).startswith(f"{out} maps its columns by name (delta.columnMapping.mode=name)")


def test_deletion_vectors_allow_a_night_of_our_parts_and_refuse_one_that_must_read_another_writers_file(tmp_path, capsys):
    out, args = night_one(str(tmp_path))
    table(out).alter.add_feature(TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
    write_night(str(tmp_path / "in"), None, 1, 1, prefix="new")  # replaces our own part: removed whole, nothing read
    main(args)
    compact(out, None, "delta")
    write_night(str(tmp_path / "in"), None, 2, 1, prefix="newer")  # its rows now lie in the compaction's file
    line = failed(args, capsys, 2)
    assert line.startswith(f"{out} has deletion vectors, and this night must take rows out of a file another writer made")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_vacuum_that_deletes_the_nights_files_before_its_commit_is_named_and_the_next_night_mends_it(
        where, tmp_path, request, monkeypatch, capsys):
    endpoint = request.getfixturevalue("s3_env") if where == "s3" else None
    root = f"s3://{request.getfixturevalue('s3_bucket')}" if where == "s3" else str(tmp_path)
    out, args = night_one(root, endpoint)
    write_night(f"{root}/in", endpoint, 1, 1, prefix="new")
    real = finish.commit_run

    def vacuumed_first(*a, **k):  # the platform's VACUUM, retention 0, every file no version names
        table(out, endpoint).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)
        return real(*a, **k)

    with monkeypatch.context() as patch:
        patch.setattr(finish, "commit_run", vacuumed_first)
        line = failed(args, capsys, 4)
    assert "parts this night wrote are gone before its commit" in line and "VACUUM" in line and "--resume" in line
    main(args)
    holds_what_a_fresh_run_writes(root, endpoint, "delta")
