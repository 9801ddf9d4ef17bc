"""S3 retries: bounded, the same in every worker process, visible in logs, and able to retry
the reads jobs actually make.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from job.config import JobConfig
from job.input.plan import read_file
from job.prepare import plan_input
from storage import resolve
from tests.common.datasets import write_mixed

# What the AWS SDK logs, at ARROW_S3_LOG_LEVEL=warn, each time it waits to retry a request.
RETRY_LINE = "Request failed, now waiting"


def test_retry_attempts_survive_pickling(s3_bucket, fault_proxy, monkeypatch):
    """Workers get the filesystem pickled; pyarrow alone would drop its retry strategy (3 tries)."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    proxy = fault_proxy(fail_all=True)
    filesystem = pickle.loads(pickle.dumps(resolve(f"s3://{s3_bucket}/x", proxy.url).filesystem))
    with pytest.raises(OSError, match="503"):
        filesystem.get_file_info(f"{s3_bucket}/x")
    assert proxy.counts["requests"] == 2


def test_reads_survive_slowdown_on_small_column_chunks(s3_bucket, s3_env, fault_proxy):
    """The id column of each file is smaller than S3's SlowDown error body; a GET of it alone
    fails unretried in pyarrow ("Failed to flush response stream"). Reads coalesce it."""
    ids, _ = write_mixed(f"s3://{s3_bucket}/in/", s3_env)
    proxy = fault_proxy(seed=5, kinds=("slowdown",))
    config = JobConfig(input=f"s3://{s3_bucket}/in/", output=None, s3_endpoint_url=proxy.url)
    plan = plan_input(resolve(config.input, proxy.url), config)
    # The reads are what this test is for: planning's own requests under faults are the Ray and Spark fault tests',
    # and their retries' waits would be most of this test's time.
    proxy.fault_rate = 0.3
    for _ in range(2):  # two reads of every file meet 10 faults
        read = [i for file in plan.files for batch_ids, _ in read_file(plan, file, batch_rows=64) for i in batch_ids]
        assert sorted(read) == sorted(ids)
    assert proxy.counts["slowdown"] >= 5, proxy.counts


def test_retries_are_logged_with_arrow_s3_log_level(s3_bucket, fault_proxy, tmp_path):
    """ARROW_S3_LOG_LEVEL=warn makes the AWS SDK log one line per retry, in every process."""
    proxy = fault_proxy(fault_rate=0.3, kinds=("slowdown", "reset"), seed=4)
    result = subprocess.run(
        [sys.executable, "-m", "runners.make_dataset", "--output", f"s3://{s3_bucket}/made/", "--images", "12",
         "--rows-per-file", "2", "--size", "64x48", "--s3-endpoint-url", proxy.url],
        env={**os.environ, "ARROW_S3_LOG_LEVEL": "warn"}, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    logged = (result.stdout + result.stderr).count(RETRY_LINE)
    assert 1 <= logged <= proxy.faults(), (logged, proxy.counts)


def test_a_conditional_read_cut_short_is_read_again(s3_bucket, fault_proxy, monkeypatch):
    """The lease and the manifest are read through botocore (storage.conditional), which retries a failed request
    but not a body cut short after its headers: the read is asked again, whole, until one arrives complete."""
    from storage.conditional import create_exclusive, read_versioned

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "30")
    proxy = fault_proxy(fault_rate=0.5, seed=3, kinds=("truncate",))
    location = resolve(f"s3://{s3_bucket}/lease-test", proxy.url)
    data = b'{"owner": "a run", "padding": "' + b"x" * 4096 + b'"}'
    assert create_exclusive(location, location.join("_LEASE.json"), data) is not None
    for _ in range(10):  # a half of the GETs cut short: ten reads meet several
        found, _version = read_versioned(location, location.join("_LEASE.json"))
        assert found == data
    assert proxy.counts.get("truncate", 0) > 0, proxy.counts
