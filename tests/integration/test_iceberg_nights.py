"""Nights of the job (the local engine) on an Iceberg table other writers commit to: every input id exactly once
after their compaction, DELETE and append, and an --overwrite that a reader polling the table never fails to read."""

from __future__ import annotations

import threading

import pyarrow as pa

from job.night.formats import iceberg
from runners import local_job
from storage import resolve
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.test_iceberg_shared import another_writer, compact


def main(argv: list[str]) -> dict:
    return local_job.main([*argv, "--workers", "0"])


def ids(out: str) -> list[str]:
    return sorted(iceberg.static_table(resolve(out), None).scan().to_arrow().column("id").to_pylist())


def their_row(table) -> pa.Table:
    """One row of another job, in the table's columns: a row of ours with its id and source changed."""
    row = table.scan(limit=1).to_arrow().slice(0, 1)
    for name, value in (("id", "theirs"), ("source_file", "elsewhere")):
        index = row.schema.get_field_index(name)
        row = row.set_column(index, row.schema.field(index), pa.array([value], pa.string()))
    return row


def test_a_night_after_another_writers_compaction_delete_and_append_keeps_theirs_and_replaces_ours(tmp_path):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    first = write_night(source, None, 0, 2)
    args = job_args(source, out, None, "--incremental", "--table-format", "iceberg")
    main(args)
    another_writer(out, compact)  # both parts' rows in one file of theirs
    another_writer(out, lambda table: table.delete(f"id == '{first[0]}'"))  # a privacy request
    another_writer(out, lambda table: table.append(their_row(table)))  # another job's backfill
    replaced = write_night(source, None, 1, 1, prefix="new")  # part-00001 rewritten with other ids
    night = main(args)
    kept = [i for i in first[1:] if i not in first[3:]]  # part-00000's rows but the deleted one
    assert ids(out) == sorted([*kept, *replaced, "theirs"]) and night["table"]["version"] == 5
    snapshot = iceberg.static_table(resolve(out), None).metadata.current_snapshot()
    assert snapshot.summary.operation.value == "overwrite"  # their compacted file rewritten without part-00001's rows


def test_an_overwrite_of_the_table_is_one_version_a_polling_reader_never_fails_to_read(tmp_path):
    from pyiceberg.table import StaticTable

    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    expected = sorted(write_night(source, None, 0, 2))
    args = job_args(source, out, None, "--table-format", "iceberg")
    main(args)
    reads, failures, stop = [], [], threading.Event()

    def reader():
        while not stop.is_set():
            try:  # as readers find the latest version: through version-hint.text
                reads.append(sorted(StaticTable.from_metadata(f"file://{out}").scan().to_arrow().column("id").to_pylist()))
            except Exception as e:  # noqa: BLE001 - any failed read is what this test counts
                failures.append(repr(e))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        overwritten = main([*args, "--overwrite"])
    finally:
        stop.set()
        thread.join()
    assert failures == [] and len(reads) >= 3 and all(read == expected for read in reads)
    assert overwritten["table"]["version"] == 2 and ids(out) == expected
