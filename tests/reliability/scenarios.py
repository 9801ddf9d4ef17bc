"""Fault scenarios that the Ray and the Spark tests run the same way, each against its own job."""

from __future__ import annotations

from types import ModuleType

from job import prepare
from job.cli import run_main
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from benchmarks.harness.fault_proxy import FaultProxy


def s3_faults_lose_no_row(job: ModuleType, bucket: str, s3_env: str, proxy: FaultProxy) -> None:
    """Run ``job.main`` through a proxy that fails some S3 requests; the output contract must hold in full."""
    ids, bad = write_mixed(f"s3://{bucket}/images/", s3_env)
    argv = ["--input", f"s3://{bucket}/images/", "--output", f"s3://{bucket}/preds/", "--s3-endpoint-url", proxy.url]
    manifest = job.main(["--weights", "random", "--batch-size", "8", *argv])
    rows, _ = read_output(f"s3://{bucket}/preds/", s3_env)
    assert_output_contract(rows, manifest, ids, bad)
    assert proxy.faults() >= 5 and proxy.counts["slowdown"] and proxy.counts["reset"], proxy.counts


def s3_gone_after_planning(job: ModuleType, bucket: str, s3_env: str, proxy: FaultProxy, monkeypatch) -> int:
    """Run ``job.main`` with S3 dying for good at the first read of an input file once the job
    has planned (503 SlowDown, 2 tries a request); returns its exit code."""
    write_mixed(f"s3://{bucket}/images/", s3_env)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # a dead endpoint is given up on after 2 tries
    prepare_job = prepare.prepare_job

    def prepare_then_fail(config, described):
        prepared = prepare_job(config, described)
        proxy.fail_from(lambda method, path: method == "GET" and "/images/part-" in path)
        return prepared

    monkeypatch.setattr(prepare, "prepare_job", prepare_then_fail)  # every engine's main plans through job.prepare
    argv = ["--input", f"s3://{bucket}/images/", "--output", f"s3://{bucket}/preds/", "--s3-endpoint-url", proxy.url]
    return run_main(job.main, ["--weights", "random", *argv])
