"""A night's sequence of runs with upper- and mixed-case S3 schemes, in one working folder: the rows land on S3 under
the ``s3://`` prefix the scheme names, and nothing appears in the working folder (a scheme read as a local path
would make a folder named after the bucket there)."""

from __future__ import annotations

import boto3

from runners import local_job, make_dataset
from tests.integration.table_scenarios import read_delta


def test_a_nights_runs_with_upper_case_schemes_write_to_s3_and_nothing_in_the_working_folder(
        s3_bucket, s3_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    endpoint = ["--s3-endpoint-url", s3_env]
    make_dataset.main(["--output", f"S3A://{s3_bucket}/in/", "--images", "4", "--rows-per-file", "2", "--size", "64x48",
                       "--workers", "1", *endpoint])
    job = ["--weights", "random", "--workers", "0", "--table-format", "delta", *endpoint]

    first = local_job.main([*job, "--input", f"S3://{s3_bucket}/in/", "--output", f"S3://{s3_bucket}/out"])
    boto3.client("s3", endpoint_url=s3_env).delete_object(Bucket=s3_bucket, Key="in/part-00001.parquet")
    night = local_job.main([*job, "--input", f"s3A://{s3_bucket}/in/", "--output", f"S3a://{s3_bucket}/out",
                            "--incremental"])
    again = local_job.main([*job, "--input", f"S3N://{s3_bucket}/in/", "--output", f"S3://{s3_bucket}/out", "--resume"])

    assert [m["output"] for m in (first, night)] == [f"s3://{s3_bucket}/out"] * 2
    assert again["output"] == f"s3://{s3_bucket}/out" and again["config"]["input"] == f"s3://{s3_bucket}/in/"
    rows = read_delta(f"s3://{s3_bucket}/out", s3_env).to_pylist()
    assert (first["counts"]["rows_out"], len(rows)) == (4, 2)  # the night took the deleted file's rows out of the table
    assert all(row["error"] is None for row in rows)
    assert list(tmp_path.iterdir()) == []
