"""The serving container's request limit follows the job's MaxPayloadInMB, and the local agent,
like Batch Transform's, never sends an object over it."""

from __future__ import annotations

import pytest

from job.errors import JobError
from runners.sagemaker import container, local_transform
from storage import resolve

MIB = 1024 * 1024


@pytest.mark.parametrize("max_payload_mb", [1, 6, 7, 10, 50, 100])
def test_the_container_accepts_every_shard_the_job_may_send(max_payload_mb):
    # TorchServe alone refuses bodies over 6,553,500 bytes: without TS_MAX_REQUEST_SIZE in the
    # model's variables every shard over 6.25 MiB was a 413 on AWS.
    env = container.environment(max_payload_mb)
    assert container.request_limit(env) >= max_payload_mb * MIB
    assert container.request_limit({}) == 6_553_500  # what the image does when told nothing


def test_a_limit_that_is_not_a_number_is_named():
    with pytest.raises(JobError, match=r"TS_MAX_REQUEST_SIZE='6MB' is not a number of bytes"):
        container.request_limit({"TS_MAX_REQUEST_SIZE": "6MB"})


def test_the_local_agent_never_sends_an_object_over_max_payload(tmp_path):
    shards, outputs = tmp_path / "input", tmp_path / "output"
    shards.mkdir()
    (shards / "shard-00000-0000.parquet").write_bytes(b"x" * (MIB + 1))
    # Port 9 on loopback: nothing listens there; a request sent would fail as "request failed".
    transform = local_transform.Transform("http://127.0.0.1:9", resolve(str(shards)), resolve(str(outputs)),
                                          max_concurrent_transforms=1, max_payload_mb=1)
    failures = local_transform.run_transform(transform, ["shard-00000-0000.parquet"])
    assert failures["shard-00000-0000.parquet"].startswith("Too much data for max payload size: 1048577 bytes")
