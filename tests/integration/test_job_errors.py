"""Every user mistake stops before any work: one line naming the problem and the fix, exit 2."""

from __future__ import annotations

import subprocess
import sys

import boto3
import pytest

from runners import ray_job
from job.cli import run_main
from tests.common.datasets import write_mixed

# One local Ray for the module (tests/conftest.py): each refusal is decided by the job core before any
# work, whether the Ray beside it was started for the run or joined.
pytestmark = pytest.mark.usefixtures("local_ray")


def refused(capsys, *argv: str) -> str:
    """Run the Ray job's CLI in-process; assert it refused in one line, return that line."""
    assert run_main(ray_job.main, ["--weights", "random", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_missing_bucket(s3_env, capsys):
    err = refused(capsys, "--input", "s3://no-such-bucket/x/", "--output", "s3://no-such-bucket/y/", "--s3-endpoint-url", s3_env)
    assert "s3://no-such-bucket/x/: bucket 'no-such-bucket' does not exist; create it or fix --input" in err


def test_missing_prefix_and_empty_dataset(s3_bucket, s3_env, capsys, tmp_path):
    assert "no such file or prefix" in refused(capsys, "--input", f"s3://{s3_bucket}/nothing/", "--output", str(tmp_path / "o"), "--s3-endpoint-url", s3_env)
    boto3.client("s3", endpoint_url=s3_env).put_object(Bucket=s3_bucket, Key="empty/readme.txt", Body=b"x")
    assert "not a Parquet file" in refused(capsys, "--input", f"s3://{s3_bucket}/empty/", "--output", str(tmp_path / "o"), "--s3-endpoint-url", s3_env)


def test_missing_output_bucket(s3_bucket, s3_env, capsys):
    write_mixed(f"s3://{s3_bucket}/in/", s3_env)
    err = refused(capsys, "--input", f"s3://{s3_bucket}/in/", "--output", "s3://absent-bucket/out/", "--s3-endpoint-url", s3_env)
    assert "bucket 'absent-bucket' does not exist; create it or fix --output" in err


def test_missing_image_column(tmp_path, capsys):
    write_mixed(str(tmp_path / "in"))
    err = refused(capsys, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--image-column", "jpeg")
    assert "no column 'jpeg'" in err and "--image-column" in err


def test_unreachable_endpoint(capsys, tmp_path):
    err = refused(capsys, "--input", "s3://bucket/in/", "--output", str(tmp_path / "out"), "--s3-endpoint-url", "http://127.0.0.1:9")
    assert "cannot reach the S3 endpoint http://127.0.0.1:9" in err


def test_no_credentials(capsys, monkeypatch, tmp_path, s3_env):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    err = refused(capsys, "--input", "s3://bucket/in/", "--output", str(tmp_path / "out"), "--s3-endpoint-url", s3_env)
    assert "no AWS credentials found" in err


def test_missing_weights_file(tmp_path, capsys):
    write_mixed(str(tmp_path / "in"))
    assert run_main(ray_job.main, ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", str(tmp_path / "w.pt")]) == 2
    err = capsys.readouterr().err
    assert "cannot read weights" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_bad_option_from_the_real_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "runners.ray_job", "--limit", "0"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr == "error: --limit must be positive, got 0\n"
