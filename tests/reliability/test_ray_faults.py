"""The Ray job under faults: S3 answering SlowDown or dropping connections, S3 gone for good
after planning, and actor processes killed mid-run. Every row comes out exactly once, or the
job stops with one line; it never hangs.
"""

from __future__ import annotations

import pytest

from runners import ray_job
from job.cli import run_main
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from benchmarks.harness.processes import KillFirst, ray_actor_working, ray_data_actor
from tests.reliability.scenarios import s3_faults_lose_no_row, s3_gone_after_planning

FAULT_RATE = 0.15  # of S3 requests; each fails 10 times in a row with odds of 6e-9


pytestmark = pytest.mark.usefixtures("local_ray")  # one local Ray for the module (tests/conftest.py)


def run(*argv: str) -> dict:
    return ray_job.main(["--weights", "random", "--batch-size", "8", *argv])


@pytest.mark.slow  # CI: Spark's (tests/reliability/test_spark_faults.py): the same pyarrow S3 reads and retries
def test_s3_faults_lose_no_row(s3_bucket, s3_env, fault_proxy):
    s3_faults_lose_no_row(ray_job, s3_bucket, s3_env, fault_proxy(fault_rate=FAULT_RATE, seed=1))


def test_s3_down_from_the_start_stops_before_any_work(s3_bucket, fault_proxy, monkeypatch, capsys):
    proxy = fault_proxy(fail_all=True)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    argv = ["--input", f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", proxy.url]
    assert run_main(ray_job.main, ["--weights", "random", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: s3://{s3_bucket}/images/: ") and "503" in err and err.count("\n") == 1, err
    assert proxy.counts["requests"] == 2  # one request, tried twice


def test_s3_gone_after_planning_stops_in_one_line(s3_bucket, s3_env, fault_proxy, monkeypatch, capsys):
    assert s3_gone_after_planning(ray_job, s3_bucket, s3_env, fault_proxy(), monkeypatch) == 4  # stopped part-way
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: s3://{s3_bucket}/images/part-") and "503" in err, err


# CI: the predictor's (its batches on the GPU are the costly ones to lose); the preprocessor's under -m slow
@pytest.mark.parametrize("actor", [pytest.param("RayPreprocess", marks=pytest.mark.slow), "RayClassify"])
def test_killed_actor_redoes_its_batches(actor, s3_bucket, s3_env, fault_proxy, tmp_path):
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env, rows_per_file=4)
    # A slow store (0.2 s a request) keeps each preprocessing task busy for about a second,
    # so the actor is caught early in its work, not as it finishes.
    slow = fault_proxy(latency_s=0.2)
    with KillFirst(ray_actor_working(actor), spare=ray_data_actor) as killer:
        manifest = run("--input", f"s3://{s3_bucket}/images/", "--output", str(tmp_path / "out"), "--s3-endpoint-url", slow.url)
    assert killer.killed, f"no {actor} actor was seen working"
    rows, _ = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    stage = "preprocess" if actor == "RayPreprocess" else "classify"
    # The placement registry hears from every actor constructor: 2 means the pool's one actor was restarted.
    assert sum(p["actors"] for p in manifest["settings"]["placement"][stage]) == 2, manifest["settings"]["placement"]
