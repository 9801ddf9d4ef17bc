"""Fault scenarios that the Ray and the Spark tests run the same way, each against its own job."""

from __future__ import annotations

from types import ModuleType

from runners.job import run_main
from tests.common.datasets import write_mixed
from tests.common.fault_proxy import FaultProxy


def s3_gone_after_planning(job: ModuleType, bucket: str, s3_env: str, proxy: FaultProxy, monkeypatch) -> int:
    """Run ``job.main`` with S3 dying for good at the first read of an input file once the job
    has planned (503 SlowDown, 2 tries a request); returns its exit code."""
    write_mixed(f"s3://{bucket}/images/", s3_env)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # a dead endpoint is given up on after 2 tries
    prepare = job.prepare_job

    def prepare_then_fail(config):
        prepared = prepare(config)
        proxy.fail_from(lambda method, path: method == "GET" and "/images/part-" in path)
        return prepared

    monkeypatch.setattr(job, "prepare_job", prepare_then_fail)
    argv = ["--input", f"s3://{bucket}/images/", "--output", f"s3://{bucket}/preds/", "--s3-endpoint-url", proxy.url]
    return run_main(job.main, ["--weights", "random", *argv])
