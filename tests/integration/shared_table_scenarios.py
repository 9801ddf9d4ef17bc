"""Another writer commits to the job's Delta table, between nights and while one runs: scenarios every engine's tests run.

The other writers are the platform's: Databricks' OPTIMIZE and VACUUM (deltalake's ``optimize.compact`` and
``vacuum``), a DELETE for a privacy request, another job's append. Night 1 writes three input files; night 2
replaces one, deletes one and adds one. Whatever the other writer did, the table then holds every input id
once (less the row it deleted, plus the rows it appended), every version since the other writer's last commit
reads, and a third night with nothing new changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from job.night import finish
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import delete, write_night
from tests.integration.table_scenarios import delta_options, read_delta

Main = Callable[[Sequence[str] | None], dict]
OTHER_WRITERS = ("append", "delete", "compact", "vacuum")
DELETED = "img-00001"  # a privacy request's row: of the input file that stays
APPENDED = "backfill-0"  # another job's row, from a source of its own


def other_writer(kind: str, out: str, endpoint: str | None) -> None:
    """Commit as the platform would: ``kind`` one of OTHER_WRITERS."""
    from deltalake import DeltaTable, write_deltalake

    options = delta_options(endpoint)
    table = DeltaTable(out, storage_options=options)
    if kind == "append":
        row = table.to_pyarrow_table().slice(0, 1)
        row = row.set_column(0, row.schema.field("id"), pa.array([APPENDED], pa.string()))
        row = row.set_column(row.schema.get_field_index("source_file"), "source_file", pa.array(["backfill/0.parquet"]))
        write_deltalake(out, row, mode="append", storage_options=options)
    elif kind == "delete":
        table.delete(f"id = '{DELETED}'")
    else:
        table.optimize.compact()
        if kind == "vacuum":  # every file no longer in the table, at once: our parts compaction replaced
            DeltaTable(out, storage_options=options).vacuum(retention_hours=0, enforce_retention_duration=False,
                                                            dry_run=False)


def nights_around_another_writer(main: Main, root: str, endpoint: str | None, kind: str, during: bool, monkeypatch,
                                 *engine_args: str) -> None:
    """Night 1, the other writer (between nights, or from a hook inside night 2 before its commit), night 2, night 3."""
    from deltalake import DeltaTable

    source, out = f"{root}/in", f"{root}/out"
    kept = write_night(source, endpoint, 0, 3)[:3]  # part-00000 stays; part-00001 is replaced, part-00002 deleted
    args = job_args(source, out, endpoint, "--incremental", "--table-format", "delta", *engine_args)
    main(args)
    if not during:
        other_writer(kind, out, endpoint)
    replaced = write_night(source, endpoint, 1, 1, prefix="new")
    delete(source, endpoint, "part-00002.parquet")
    added = write_night(source, endpoint, 3, 1)
    with monkeypatch.context() as patch:
        if during:
            real = finish.commit_run

            def committing_after_them(*args, **kwargs):
                other_writer(kind, out, endpoint)
                return real(*args, **kwargs)

            patch.setattr(finish, "commit_run", committing_after_them)
        night = main(args)
    expected = {*kept, *replaced, *added} - ({DELETED} if kind == "delete" else set()) | (
        {APPENDED} if kind == "append" else set())
    assert_holds_once(out, endpoint, expected)
    assert night["table"]["delta"]["replaced"] == ["part-00001.parquet"] and night["table"]["delta"]["removed"] == [
        "part-00002.parquet"]
    latest = DeltaTable(out, storage_options=delta_options(endpoint)).version()
    since = latest - 1 if kind == "vacuum" else 0  # a vacuum of every old file leaves only its own versions readable
    for version in range(since, latest + 1):
        read_delta(out, endpoint, version=version)  # every version in the time-travel window reads
    again = main(args)  # nothing new: nothing committed, the same rows
    assert again["run_id"] == night["run_id"] and DeltaTable(out, storage_options=delta_options(endpoint)).version() == latest
    assert_holds_once(out, endpoint, expected)


def assert_holds_once(out: str, endpoint: str | None, expected: set[str]) -> None:
    """The latest version holds exactly ``expected``, each id once, every row with its lineage."""
    table = read_delta(out, endpoint)
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"ids twice: {sorted(i for i in ids if ids.count(i) > 1)}"
    assert set(ids) == expected
    assert pc.all(pc.is_valid(table.column("source_file"))).as_py()
