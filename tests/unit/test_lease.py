"""The output-prefix lease: one run at a time, renewed, released, taken over when expired; local and S3."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Iterator

import pytest

from job.config import JobConfig
from job.driver import run_job
from job.engine import EngineRun, Job
from job.errors import JobError
from job.lease.lease import LEASE_NAME, LeaseOwner, OutputLease
from storage import Location, resolve
from storage.conditional import create_exclusive, delete_if, read_versioned, replace_if
from tests.common.datasets import write_mixed
from tests.common.plans import engine_running


@pytest.fixture
def output(data_root) -> Location:
    """An output prefix on a local path or on the moto S3 server (``data_root``, tests/conftest.py)."""
    base, endpoint = data_root
    return resolve(f"{base}/out", endpoint)


def owner(run: str) -> LeaseOwner:
    return LeaseOwner(run, "host-1", 4242)


def lease_file(output: Location) -> dict:
    data, _ = read_versioned(output, output.join(LEASE_NAME))
    return json.loads(data)


def test_a_second_run_is_refused_naming_the_holder_and_the_expiry(output):
    first = OutputLease.acquire(output, owner("run-1"), ttl_s=60)
    assert lease_file(output)["owner"] == {"run_id": "run-1", "host": "host-1", "pid": 4242, "boot_id": None,
                                           "pid_namespace": None, "start_ticks": None}
    with pytest.raises(JobError) as refused:
        OutputLease.acquire(output, owner("run-2"), ttl_s=60, take_over_expired=True)
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first.record.expires_at))
    assert f"run run-1 on host-1 (pid 4242) holds its lease until {expires}" in str(refused.value)
    assert "choose another --output" in str(refused.value)


def test_release_frees_the_prefix(output):
    OutputLease.acquire(output, owner("run-1"), ttl_s=60).release()
    assert read_versioned(output, output.join(LEASE_NAME)) is None
    assert OutputLease.acquire(output, owner("run-2"), ttl_s=60).record.owner.run_id == "run-2"


def test_renew_moves_the_expiry(output):
    lease = OutputLease.acquire(output, owner("run-1"), ttl_s=60)
    before = lease.record.expires_at
    time.sleep(0.05)
    lease.renew()
    assert lease.record.expires_at > before and lease_file(output)["expires_at"] == lease.record.expires_at
    lease.check()


def test_a_write_of_ours_whose_answer_was_lost_is_still_ours(output):
    """A conditional write can take effect and its answer be lost (a reset): the retry must not refuse its own run."""
    lease = OutputLease.acquire(output, owner("run-1"), ttl_s=60)
    later = dataclasses.replace(lease.record, expires_at=lease.record.expires_at + 30)
    assert replace_if(output, output.join(LEASE_NAME), later.to_bytes(), lease.version) is not None  # the lost renewal
    lease.renew()  # from the version the store holds, not the one this object knew
    lease.check()
    assert OutputLease.acquire(output, owner("run-1"), ttl_s=60).version == read_versioned(output, output.join(LEASE_NAME))[1]
    with pytest.raises(JobError, match="holds its lease"):
        OutputLease.acquire(output, owner("run-2"), ttl_s=60)


def test_an_expired_lease_is_taken_over_only_with_resume(output):
    crashed = OutputLease.acquire(output, owner("run-1"), ttl_s=0.2)
    time.sleep(0.3)
    with pytest.raises(JobError, match=r"run run-1 on host-1 \(pid 4242\) held .* stopped renewing .*pass --resume"):
        OutputLease.acquire(output, owner("run-2"), ttl_s=60)
    resumed = OutputLease.acquire(output, owner("run-2"), ttl_s=60, take_over_expired=True)
    assert lease_file(output)["owner"]["run_id"] == "run-2"
    # The stalled first run learns it lost the prefix, and cannot remove the new holder's lease.
    with pytest.raises(JobError, match=r"run run-1 .* lost its lease .* now held by run run-2"):
        crashed.renew()
    with pytest.raises(JobError, match="lost its lease"):
        crashed.check()
    assert crashed.release() is False and lease_file(output)["owner"]["run_id"] == "run-2"
    resumed.check()


def race(contenders: int, attempt) -> tuple[list, list]:
    """Run ``attempt(i)`` in ``contenders`` threads released at once; returns (results, JobErrors)."""
    start, won, refused = threading.Barrier(contenders), [], []

    def run(i: int) -> None:
        start.wait()
        try:
            won.append(attempt(i))
        except JobError as e:
            refused.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, refused


def test_concurrent_acquires_have_exactly_one_winner(output):
    won, refused = race(8, lambda i: OutputLease.acquire(output, owner(f"run-{i}"), ttl_s=60))
    assert len(won) == 1 and len(refused) == 7
    assert lease_file(output)["owner"]["run_id"] == won[0].record.owner.run_id


def test_concurrent_take_overs_of_an_expired_lease_have_exactly_one_winner(output):
    OutputLease.acquire(output, owner("crashed"), ttl_s=0.1)
    time.sleep(0.2)
    won, refused = race(6, lambda i: OutputLease.acquire(output, owner(f"resume-{i}"), ttl_s=60, take_over_expired=True))
    assert len(won) == 1 and len(refused) == 5
    assert lease_file(output)["owner"]["run_id"] == won[0].record.owner.run_id
    assert all("holds its lease until" in str(e) for e in refused)


def test_held_renews_past_the_ttl_and_releases_at_the_end(output):
    lease = OutputLease.acquire(output, owner("run-1"), ttl_s=1.0)  # renewed every 0.33 s: ample even on a loaded machine
    with lease.held():
        time.sleep(2.2)  # over two TTLs: only renewals keep it
        with pytest.raises(JobError, match="holds its lease"):
            OutputLease.acquire(output, owner("run-2"), ttl_s=60, take_over_expired=True)
        lease.check()
    assert read_versioned(output, output.join(LEASE_NAME)) is None


def test_held_releases_when_the_job_fails(output):
    with pytest.raises(RuntimeError, match="worker died"), OutputLease.acquire(output, owner("run-1"), ttl_s=60).held():
        raise RuntimeError("worker died")
    assert read_versioned(output, output.join(LEASE_NAME)) is None


def test_a_lease_file_this_job_did_not_write_is_refused(output):
    create_exclusive(output, output.join(LEASE_NAME), b"garbage")
    with pytest.raises(JobError, match=r"_lease.json: not a lease this job wrote .*delete it"):
        OutputLease.acquire(output, owner("run-1"), ttl_s=60)


def test_conditional_writes_hold_to_their_versions(output):
    path = output.join("object")
    first = create_exclusive(output, path, b"1")
    assert first is not None and create_exclusive(output, path, b"2") is None
    assert replace_if(output, path, b"3", "not-the-version") is None
    second = replace_if(output, path, b"3", first)
    assert second is not None and read_versioned(output, path) == (b"3", second)
    assert delete_if(output, path, first) is False and delete_if(output, path, second) is True
    assert read_versioned(output, path) is None and replace_if(output, path, b"4", second) is None


# The driver (job.driver.run_job) holds the lease from prepare to the manifest, and releases it whatever happens.


def job_config(tmp_path) -> JobConfig:
    write_mixed(str(tmp_path / "in"))
    return JobConfig(input=str(tmp_path / "in"), output=str(tmp_path / "out"), weights="random")


def test_the_driver_holds_the_lease_while_the_engine_runs_and_releases_it_when_the_engine_fails(tmp_path):
    def engine_that_dies(job: Job, session: object, args: argparse.Namespace) -> EngineRun:
        with pytest.raises(JobError, match=f"run {job.run_id} on .* holds its lease until"):
            OutputLease.acquire(job.parts.output, owner("second"), take_over_expired=True)
        raise RuntimeError("the engine died")

    with pytest.raises(RuntimeError, match="the engine died"):
        run_job(engine_running(engine_that_dies), job_config(tmp_path), argparse.Namespace())
    assert not (tmp_path / "out" / LEASE_NAME).exists()


def test_the_driver_releases_the_lease_when_the_engine_fails_to_start(tmp_path):
    @contextlib.contextmanager
    def no_cluster(args: argparse.Namespace) -> Iterator[None]:
        raise RuntimeError("no cluster")
        yield

    engine = engine_running(lambda job, session, args: EngineRun(settings={}), start=no_cluster)
    with pytest.raises(RuntimeError, match="no cluster"):
        run_job(engine, job_config(tmp_path), argparse.Namespace())
    assert (tmp_path / "out").is_dir() and not (tmp_path / "out" / LEASE_NAME).exists()  # taken while starting, released
