"""Image objects as --input on the local engine, in a local folder and on the S3 server."""

from __future__ import annotations

import boto3
import pyarrow as pa
import pyarrow.parquet as pq

from job.sample.synthetic import synthetic_rows
from runners import local_job
from tests.common.contract import read_output
from tests.integration import object_scenarios as scenarios
from tests.integration.checks_scenarios import job_args, refused


def test_objects_run_as_they_lie_and_a_night_redoes_only_their_groups(data_root):
    root, endpoint = data_root
    scenarios.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(local_job.main, root, endpoint, "--workers", "0")


def test_keys_with_empty_path_segments_are_rows_named_as_written(s3_bucket, s3_env):
    """S3 keys with an empty segment (``a//b.jpg``, ``/lead.jpg``), which pyarrow refuses to open: rows, ids as written."""
    keys = ["photos/double//slash.jpg", "photos/plain.jpg", "/leading.jpg", "x//y//z.jpg"]
    client = boto3.client("s3", endpoint_url=s3_env)
    for key, (_, data) in zip(keys, synthetic_rows(len(keys), "jpeg", (32, 24), seed=3)):
        client.put_object(Bucket=s3_bucket, Key=f"in/{key}", Body=data)
    source, out = f"s3://{s3_bucket}/in", f"s3://{s3_bucket}/out"
    manifest = local_job.main(job_args(source, out, s3_env, *scenarios.SMALL, "--workers", "0"))
    rows, _ = read_output(out, s3_env)
    assert sorted(r["id"] for r in rows) == sorted(keys) and manifest["counts"]["predicted"] == len(keys)
    assert [r["error"] for r in rows] == [None] * len(keys)


def test_a_parquet_file_whose_key_has_an_empty_segment_is_refused_in_one_line(s3_bucket, s3_env, capsys):
    """A Parquet file is read in ranges, which only pyarrow's reader does: such a key is named, with the fix."""
    table = pa.table({"id": ["a", "b"], "image": [data for _, data in synthetic_rows(2, "jpeg", (32, 24), seed=4)]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    boto3.client("s3", endpoint_url=s3_env).put_object(Bucket=s3_bucket, Key="in/day//part-0.parquet", Body=sink.getvalue().to_pybytes())
    line = refused(local_job.main, job_args(f"s3://{s3_bucket}/in", f"s3://{s3_bucket}/out", s3_env, "--workers", "0"), capsys)
    assert line.startswith(f"s3://{s3_bucket}/in/day//part-0.parquet: a Parquet file whose key has an empty path segment")
