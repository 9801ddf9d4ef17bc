"""A Delta table the platform shares, on the local engine (a local path and an S3 prefix): other writers' appends,
DELETEs, compactions and vacuums, between nights and during one; ``--overwrite`` under a reader; a lost log."""

from __future__ import annotations

import threading
import time

import pytest
from deltalake import DeltaTable

from runners import local_job
from tests.integration.checks_scenarios import job_args, refused
from tests.integration.incremental_scenarios import write_night
from tests.integration import privacy_scenarios as privacy
from tests.integration.shared_table_scenarios import OTHER_WRITERS, nights_around_another_writer
from tests.integration.table_scenarios import read_delta

LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


@pytest.mark.parametrize("during", [False, True], ids=["between-nights", "during-a-night"])
@pytest.mark.parametrize("kind", OTHER_WRITERS)
def test_another_writers_commit_is_kept_and_the_night_is_right(tmp_path, kind, during, monkeypatch):
    nights_around_another_writer(main, str(tmp_path), None, kind, during, monkeypatch)


@pytest.mark.parametrize("kind", ["compact", "delete"])
def test_another_writer_during_a_night_on_s3(s3_bucket, s3_env, kind, monkeypatch):
    nights_around_another_writer(main, f"s3://{s3_bucket}", s3_env, kind, True, monkeypatch)


def test_overwrite_of_a_delta_table_is_one_version_readers_never_fail_on(tmp_path):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 3)
    args = job_args(source, out, None, "--table-format", "delta")
    main(args)
    before = read_delta(out, None).column("id").to_pylist()
    reads, failures, stop = [], [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                reads.append(sorted(read_delta(out, None).column("id").to_pylist()))
            except Exception as e:  # noqa: BLE001 - every failed read is the finding
                failures.append(repr(e))
            time.sleep(0.01)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        redone = main([*args, "--overwrite", "--topk", "3"])
    finally:
        stop.set()
        thread.join()
    assert not failures, failures[:3]
    assert len(reads) >= 3 and all(ids == sorted(before) for ids in reads)
    assert DeltaTable(out).version() == redone["table"]["version"] == 1
    assert {len(t) for t in read_delta(out, None).column("topk_labels").to_pylist()} == {3}


def test_a_lost_delta_log_is_refused_not_rebuilt(tmp_path, capsys):
    import shutil

    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 2)
    args = job_args(source, out, None, "--incremental", "--table-format", "delta")
    main(args)
    shutil.rmtree(tmp_path / "out" / "_delta_log")
    write_night(source, None, 2, 1)
    line = refused(local_job.main, [*args, *LOCAL], capsys)
    assert line == (f"{out}: the manifest records Delta version 0, but there is no Delta log (_delta_log/) now; the table is "
                    "never rebuilt from the job's own records: restore the log, or pass --overwrite to redo the table")


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_delete_after_a_compaction_then_a_changed_file(table_format, tmp_path):
    """Databricks' OPTIMIZE, then a privacy DELETE by source, then a changed input file: the night reads the other
    writer's files in whatever types its writer wrote (delta-rs: string_view), every id once, every row as fresh."""
    privacy.a_delete_after_a_compaction_then_a_changed_file(main, str(tmp_path), None, table_format)


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_an_image_objects_row_deleted_by_its_key_stays_deleted(table_format, tmp_path):
    privacy.an_object_deleted_by_key_stays_deleted(main, str(tmp_path), None, table_format)


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_delete_after_a_compaction_then_a_changed_file_on_s3(table_format, s3_bucket, s3_env):
    privacy.a_delete_after_a_compaction_then_a_changed_file(main, f"s3://{s3_bucket}", s3_env, table_format)


def test_an_image_objects_row_deleted_by_its_key_stays_deleted_on_s3(s3_bucket, s3_env):
    privacy.an_object_deleted_by_key_stays_deleted(main, f"s3://{s3_bucket}", s3_env, "delta")


@pytest.mark.parametrize("kind", ["compact", "delete", "append"])
def test_another_writer_during_an_iceberg_night(kind, tmp_path, monkeypatch):
    privacy.an_iceberg_night_with_another_writer_during_it(main, str(tmp_path), None, kind, monkeypatch)
