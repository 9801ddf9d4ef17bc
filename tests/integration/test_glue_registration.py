"""``--glue-table``: the Ray job's Delta table registered in Glue (moto's server), as Athena reads it, and its refusals."""

from __future__ import annotations

import json

import boto3
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from job.cli import run_main
from job.errors import JobError
from runners import ray_job
from runners.ray import glue as registration
from runners.ray.glue import GLUE_ACTIONS, hive_type, register
from job.sample.synthetic import synthetic_rows, write_dataset
from storage import resolve

STORAGE = {"AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


@pytest.fixture()
def glue(s3_env, s3_bucket, monkeypatch):
    """moto's Glue on the session's server (boto3 finds it through AWS_ENDPOINT_URL_GLUE) and a database of this test."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", s3_env)
    client = boto3.client("glue", endpoint_url=s3_env)
    database = s3_bucket.replace("-", "_")  # moto's Glue lives as long as the server: a database per test
    client.create_database(DatabaseInput={"Name": database})
    client.database = database
    return client


def write_delta(uri: str, endpoint: str, table: pa.Table, **options) -> None:
    write_deltalake(uri, table, storage_options={**STORAGE, "AWS_ENDPOINT_URL": endpoint}, **options)


def test_delta_types_have_their_glue_names():
    assert [hive_type(t) for t in ("string", "long", "integer", "float", "double", "boolean", "timestamp", "decimal(10, 2)")] == \
        ["string", "bigint", "int", "float", "double", "boolean", "timestamp", "decimal(10,2)"]
    nested = {"type": "struct", "fields": [{"name": "k", "type": {"type": "array", "elementType": "long", "containsNull": True}},
                                           {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "double"}}]}
    assert hive_type(nested) == "struct<k:array<bigint>,m:map<string,double>>"
    with pytest.raises(JobError, match="type 'variant'"):
        hive_type("variant")


def recorded_calls(monkeypatch) -> list[str]:
    """The Glue operations the registration's client calls, as IAM names them (glue:<operation>)."""
    calls, client = [], registration._client

    def recording(output):
        made = client(output)
        made.meta.events.register("before-call.glue", lambda model, **_: calls.append(model.name))
        return made

    monkeypatch.setattr(registration, "_client", recording)
    return calls


def test_the_first_registration_creates_the_entry_later_ones_follow_the_logs_columns(s3_bucket, s3_env, glue, monkeypatch):
    calls = recorded_calls(monkeypatch)
    out, name = f"s3://{s3_bucket}/preds/", f"{glue.database}.predictions"
    write_delta(out, s3_env, pa.table({"id": ["a"], "score": pa.array([0.5], pa.float32())}))
    assert register(name, out, s3_env) == "created"
    entry = glue.get_table(DatabaseName=glue.database, Name="predictions")["Table"]
    assert entry["Parameters"]["table_type"] == "DELTA" and entry["TableType"] == "EXTERNAL_TABLE"
    assert entry["StorageDescriptor"]["Location"] == out and entry["PartitionKeys"] == []
    assert [(c["Name"], c["Type"]) for c in entry["StorageDescriptor"]["Columns"]] == [("id", "string"), ("score", "float")]
    write_delta(out, s3_env, pa.table({"id": ["b"], "score": pa.array([0.2], pa.float32())}), mode="append")
    assert register(name, out, s3_env) == "unchanged"  # a night of rows: the entry stays, Glue keeps no new version
    write_delta(out, s3_env, pa.table({"id": ["c"], "score": pa.array([0.1], pa.float32()), "label": [3]}),
                mode="overwrite", schema_mode="overwrite")
    assert register(name, out, s3_env) == "columns updated"
    columns = glue.get_table(DatabaseName=glue.database, Name="predictions")["Table"]["StorageDescriptor"]["Columns"]
    assert [c["Name"] for c in columns] == ["id", "score", "label"] and columns[2]["Type"] == "bigint"
    assert set(calls) == set(GLUE_ACTIONS)  # what terraform/glue.tf grants (tests/deploy/test_anyscale.py)


def test_an_entry_that_is_not_this_delta_table_and_a_missing_database_or_table_are_refused(s3_bucket, s3_env, glue):
    out = f"s3://{s3_bucket}/preds/"
    with pytest.raises(JobError, match=r"holds no Delta table to register in Glue \(no _delta_log/\)"):
        register(f"{glue.database}.t", out, s3_env)
    write_delta(out, s3_env, pa.table({"id": ["a"]}))
    with pytest.raises(JobError, match="^Glue database nowhere does not exist in us-east-1: create it"):
        register("nowhere.t", out, s3_env)
    glue.create_table(DatabaseName=glue.database, TableInput={
        "Name": "elsewhere", "Parameters": {"table_type": "DELTA"}, "StorageDescriptor": {"Location": f"s3://{s3_bucket}/other/"}})
    glue.create_table(DatabaseName=glue.database, TableInput={
        "Name": "theirs", "Parameters": {"table_type": "ICEBERG"}, "StorageDescriptor": {"Location": out}})
    with pytest.raises(JobError, match=f"is the table at s3://{s3_bucket}/other/, not at --output s3://{s3_bucket}/preds/"):
        register(f"{glue.database}.elsewhere", out, s3_env)
    with pytest.raises(JobError, match="is a ICEBERG table, not a Delta table"):
        register(f"{glue.database}.theirs", out, s3_env)
    assert glue.get_table(DatabaseName=glue.database, Name="theirs")["Table"]["StorageDescriptor"]["Location"] == out  # untouched


@pytest.mark.parametrize("argv, message", [
    (["--table-format", "parquet"], "--glue-table registers a Delta table, and --table-format is parquet: add --table-format delta"),
    (["--table-format", "iceberg"], "--iceberg-catalog glue --iceberg-table commits an Iceberg table in Glue itself"),
    (["--table-format", "delta", "--glue-table", "Bad-Name.t"], "--glue-table must be DATABASE.TABLE of lower-case"),
])
def test_what_cannot_be_registered_is_refused_before_any_work(argv, message, s3_bucket, s3_env, capsys):
    args = ["--input", "/nowhere/in", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env, "--glue-table", "db.t", *argv]
    assert run_main(ray_job.main, args) == 2
    assert message in capsys.readouterr().err


def test_a_name_glue_gives_another_table_is_refused_before_the_run_writes_anything(s3_bucket, s3_env, glue, capsys):
    glue.create_table(DatabaseName=glue.database, TableInput={
        "Name": "t", "Parameters": {"table_type": "DELTA"}, "StorageDescriptor": {"Location": f"s3://{s3_bucket}/other/"}})
    args = ["--input", "/nowhere/in", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env,
            "--table-format", "delta", "--glue-table", f"{glue.database}.t"]
    assert run_main(ray_job.main, args) == 2
    assert f"error: Glue table {glue.database}.t is the table at s3://{s3_bucket}/other/" in capsys.readouterr().err
    assert "Contents" not in boto3.client("s3", endpoint_url=s3_env).list_objects_v2(Bucket=s3_bucket)


@pytest.mark.usefixtures("local_ray")
def test_the_ray_job_registers_its_delta_table_after_the_commit_and_a_night_with_nothing_new_keeps_it(
        s3_bucket, s3_env, glue, capsys):
    write_dataset(resolve(f"s3://{s3_bucket}/in/", s3_env), synthetic_rows(4, "jpeg", (64, 48), seed=1), 4)  # one small file
    out, name = f"s3://{s3_bucket}/preds/", f"{glue.database}.predictions"
    args = ["--input", f"s3://{s3_bucket}/in/", "--output", out, "--s3-endpoint-url", s3_env, "--weights", "random",
            "--batch-size", "8", "--table-format", "delta", "--glue-table", name]
    ray_job.main(args)
    assert f"Glue table {name} ({out}): created" in capsys.readouterr().out
    entry = glue.get_table(DatabaseName=glue.database, Name="predictions")["Table"]
    log = json.loads(DeltaTable(out, storage_options={**STORAGE, "AWS_ENDPOINT_URL": s3_env}).schema().to_json())["fields"]
    assert [c["Name"] for c in entry["StorageDescriptor"]["Columns"]] == [f["name"] for f in log]  # the log's columns
    assert entry["Parameters"]["table_type"] == "DELTA" and entry["StorageDescriptor"]["Location"] == out
    ray_job.main([*args, "--incremental"])
    assert f"Glue table {name} ({out}): unchanged" in capsys.readouterr().out
    assert len(glue.get_table_versions(DatabaseName=glue.database, TableName="predictions")["TableVersions"]) == 1
