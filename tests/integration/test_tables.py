"""--table-format delta and iceberg on the local engine: the table holds the plain folder's rows, a night is one
version that readers see whole, and a run that died after its commit is finished by --resume without a second one."""

from __future__ import annotations

import threading
import time

import pytest
from deltalake import DeltaTable

from job.night import finish
from runners import local_job
from tests.common.contract import read_output
from tests.integration.checks_scenarios import job_args, refused
from tests.integration.incremental_scenarios import delete, manifest_of, write_night
from tests.integration.table_scenarios import delta_and_iceberg_hold_the_parquet_folders_rows, predictions, read_delta

LOCAL = ("--workers", "0")
READ_EVERY_S = 0.02  # a night of 9 images can take under half a second: several reads must fall inside it


def main(argv):
    return local_job.main([*argv, *LOCAL])


def test_delta_and_iceberg_tables_hold_the_parquet_folders_rows(data_root):
    root, endpoint = data_root
    write_night(f"{root}/in", endpoint, 0, 2)
    delta_and_iceberg_hold_the_parquet_folders_rows(main, root, endpoint)
    for table_format, version in (("delta", 0), ("iceberg", 1)):
        manifest = manifest_of(f"{root}/{table_format}", endpoint)
        assert manifest["table"]["version"] == version and manifest["config"]["table_format"] == table_format
    if endpoint is None:  # the readers users glob the plain folder with: exactly the table's rows
        import duckdb
        import polars

        parquet = predictions(read_output(f"{root}/parquet")[0])
        assert sorted(duckdb.sql(f"select id from read_parquet('{root}/parquet/**/*.parquet')").fetchnumpy()["id"]) == sorted(parquet)
        assert sorted(polars.scan_parquet(f"{root}/parquet/**/*.parquet").collect()["id"].to_list()) == sorted(parquet)
        assert sorted(polars.read_delta(f"{root}/delta")["id"].to_list()) == sorted(parquet)


def test_an_incremental_delta_night_is_one_version_that_readers_see_whole(tmp_path, capsys):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 3)
    args = job_args(source, out, None, "--incremental", "--table-format", "delta")
    main(args)
    last = frozenset(read_delta(out, None).column("id").to_pylist())
    line = refused(local_job.main, [*job_args(source, out, None, "--incremental"), *LOCAL], capsys)
    assert line == f"{out} holds a delta table and --table-format is parquet; pass --table-format delta, or --overwrite to " \
                   "replace it, or choose another --output"
    tonight = set(write_night(source, None, 1, 1, prefix="new"))  # part-00001 replaced by other ids
    delete(source, None, "part-00002.parquet")
    tonight |= set(write_night(source, None, 3, 1)) | {i for i in last if i.startswith("img-0000") and i < "img-00003"}
    reads, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            ids = read_delta(out, None).column("id").to_pylist()
            reads.append((len(ids), frozenset(ids)))
            time.sleep(READ_EVERY_S)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        night = main(args)
    finally:
        stop.set()
        thread.join()
    assert len(reads) >= 3, f"only {len(reads)} reads while the night ran"
    assert all(len(ids) == rows for rows, ids in reads), "a read held an id twice"
    assert {ids for _, ids in reads} <= {last, frozenset(tonight)}, "a read saw half a night"
    assert reads[0][1] == last  # the reader read while the night ran: its parts were written, not yet committed
    assert night["table"]["version"] == 1 and frozenset(read_delta(out, None).column("id").to_pylist()) == tonight
    assert frozenset(read_delta(out, None, version=0).column("id").to_pylist()) == last  # time travel: old parts kept
    assert len(night["table"]["retired"]) == 2  # the replaced file's old part and the deleted file's
    assert main(args)["run_id"] == night["run_id"] and DeltaTable(out).version() == 1  # nothing new: no commit


def test_a_run_killed_after_its_delta_commit_is_finished_by_resume_without_a_second(tmp_path, monkeypatch):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 2)
    args = job_args(source, out, None, "--table-format", "delta")
    main(args)
    write_night(source, None, 2, 1)

    def killed(*args, **kwargs):
        raise RuntimeError("killed after the commit, before the manifest")

    with monkeypatch.context() as patch:
        patch.setattr(finish, "write_manifest", killed)
        with pytest.raises(RuntimeError, match="killed after the commit"):
            main([*args, "--incremental"])
    assert len(read_delta(out, None)) == 9  # the commit was made
    resumed = main([*args, "--resume"])
    assert DeltaTable(out).version() == resumed["table"]["version"] == 1, "committed twice"
    ids = read_delta(out, None).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == resumed["counts"]["rows_out"] == 9
    redone = main([*args, "--overwrite"])  # one new version replacing every row: the old ones still read
    assert DeltaTable(out).version() == redone["table"]["version"] == 2 and len(read_delta(out, None)) == 9
    # Every night its own number, the resumed one too (it committed nothing: its work was in the log already).
    assert len(read_delta(out, None, version=1)) == 9 and redone["table"]["number"] == 4


def glue_catalog(endpoint: str):
    """pyiceberg's GlueCatalog on the moto server, as a reader of the table finds it by name."""
    from pyiceberg.catalog.glue import GlueCatalog

    return GlueCatalog("glue", **{"glue.endpoint": endpoint, "glue.region": "us-east-1", "s3.endpoint": endpoint,
                                  "s3.region": "us-east-1"})


def test_an_iceberg_table_in_glue_is_created_on_the_first_run_and_each_night_is_one_glue_commit(s3_bucket, s3_env,
                                                                                                 monkeypatch, capsys):
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", s3_env)  # boto3's own setting: pyiceberg's Glue client on moto
    source, out = f"s3://{s3_bucket}/in", f"s3://{s3_bucket}/out"
    database = s3_bucket.replace("-", "_")  # moto's Glue lives as long as the session's server: a database per test
    args = job_args(source, out, s3_env, "--incremental", "--table-format", "iceberg", "--iceberg-catalog", "glue",
                    "--iceberg-table", f"{database}.predictions")
    write_night(source, s3_env, 0, 2)
    line = refused(main, args, capsys)
    assert line.startswith(f"Glue database {database} does not exist in us-east-1: create it (terraform/glue.tf declares one)")
    boto3.client("glue", endpoint_url=s3_env).create_database(DatabaseInput={"Name": database})
    first = main(args)
    table = glue_catalog(s3_env).load_table((database, "predictions"))
    assert first["table"]["version"] == 0 and table.location() == out
    assert predictions(table.scan().to_arrow()) == predictions(read_output(out, s3_env)[0]) and first["counts"]["rows_in"] == 6
    tonight = write_night(source, s3_env, 2, 1)
    night = main(args)
    table = glue_catalog(s3_env).load_table((database, "predictions"))
    ids = table.scan().to_arrow().column("id").to_pylist()
    assert night["table"]["version"] == 1 and len(ids) == len(set(ids)) == night["counts"]["rows_in"] == 9
    assert set(tonight) < set(ids) and len(table.metadata.snapshots) == 2
    other = job_args(source, f"s3://{s3_bucket}/elsewhere", s3_env, "--table-format", "iceberg", "--iceberg-catalog",
                     "glue", "--iceberg-table", f"{database}.predictions")
    assert refused(main, other, capsys) == (f"Glue table {database}.predictions is the table at {out}, not at --output "
                                            f"s3://{s3_bucket}/elsewhere; pass another --iceberg-table, or the --output "
                                            "it was made with")
