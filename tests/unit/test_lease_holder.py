"""A lease whose holder provably died on this machine is taken over at once; any other is refused saying how long and what to do.

Holders are real processes: one that took the lease and was SIGKILLed (reaped, or left a
zombie), a live pid whose start time is not the holder's (a reused pid), this live process.
Each runs on a local path and on the moto S3 server (``data_root``, tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time

import pytest

from job.errors import JobError
from job.lease.lease import LEASE_NAME, LeaseOwner, LeaseRecord, OutputLease
from job.lease.processes import read_stat
from storage import Location, resolve
from storage.conditional import create_exclusive, read_versioned

# Takes the output's lease as a real run does, says so, then waits to be killed.
HOLD_THE_LEASE = """
import sys, time
from job.lease.lease import LeaseOwner, OutputLease
from storage import resolve
OutputLease.acquire(resolve(sys.argv[1], sys.argv[2] or None), LeaseOwner.this_process("crashed"), ttl_s=600)
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def output(data_root) -> Location:
    base, endpoint = data_root
    return resolve(f"{base}/out", endpoint)


@pytest.fixture(scope="module")
def dead_process() -> LeaseOwner:
    """This machine's identity with the pid and start time of a process that ran and has ended (reaped)."""
    child = subprocess.Popen(["sleep", "60"])
    started = read_stat(child.pid).start_ticks
    child.kill()
    child.wait()
    return dataclasses.replace(LeaseOwner.this_process("crashed"), pid=child.pid, start_ticks=started)


def holder(output: Location) -> str:
    return json.loads(read_versioned(output, output.join(LEASE_NAME))[0])["owner"]["run_id"]


def hold(output: Location, owner: LeaseOwner) -> None:
    """Write ``owner``'s lease, 10 minutes from expiry: only proof of death lets another run take it now."""
    assert OutputLease.acquire(output, owner, ttl_s=600) is not None


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_killed_holders_lease_is_taken_over_at_once_by_any_run(data_root, output, reaped, capsys):
    base, endpoint = data_root
    crashed = subprocess.Popen([sys.executable, "-c", HOLD_THE_LEASE, f"{base}/out", endpoint or ""],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert crashed.stdout.readline() == "held\n"
        crashed.kill()
        if reaped:
            crashed.wait()
        else:  # killed, not yet reaped by its parent: a zombie holds the pid, but runs nothing
            while read_stat(crashed.pid).state != "Z":
                time.sleep(0.01)
        assert holder(output) == "crashed"
        OutputLease.acquire(output, LeaseOwner.this_process("next"), ttl_s=60)  # no --resume needed: it is dead
    finally:
        crashed.kill()
        crashed.wait()
    assert holder(output) == "next"
    assert re.search(rf"run crashed on \S+ \(pid {crashed.pid}\) is no longer running .*taking over its lease",
                     capsys.readouterr().err)


def test_a_reused_pid_does_not_keep_the_lease(output):
    """The holder's pid now names a live process (this one) that started at another time: the holder is gone."""
    me = LeaseOwner.this_process("crashed")
    hold(output, dataclasses.replace(me, start_ticks=me.start_ticks - 1))
    OutputLease.acquire(output, LeaseOwner.this_process("next"), ttl_s=60)
    assert holder(output) == "next"


def test_a_live_holder_on_this_host_is_refused_until_it_finishes(output):
    hold(output, LeaseOwner.this_process("running"))  # this very process: alive
    with pytest.raises(JobError) as refused:
        OutputLease.acquire(output, LeaseOwner.this_process("next"), ttl_s=60, take_over_expired=True)
    assert re.fullmatch(r".*/_lease\.json: another run is writing this output: run running on \S+ \(pid \d+\) holds its "
                        r"lease until \S+Z \((599|600) s from now\) and is still running; wait for it to finish, or "
                        r"choose another --output", str(refused.value)), refused.value
    assert holder(output) == "running"


ELSEWHERE = {  # a dead process's owner, seen from where this host cannot tell it died
    "another host": ({"host": "host-9"}, "it is on another host or in another container"),
    "another boot": ({"boot_id": "00000000-0000-0000-0000-000000000000"}, "it is on another host or in another container"),
    "another container": ({"pid_namespace": "pid:[1]"}, "it is on another host or in another container"),
}


@pytest.mark.parametrize("where", ELSEWHERE)
@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
def test_a_holder_elsewhere_is_refused_saying_how_long_and_what_to_do(output, dead_process, where, resume):
    changes, why = ELSEWHERE[where]
    hold(output, dataclasses.replace(dead_process, **changes))
    with pytest.raises(JobError) as refused:
        OutputLease.acquire(output, LeaseOwner.this_process("next"), ttl_s=60, take_over_expired=resume)
    retry = "run this again" if resume else "run again with --resume"
    assert re.fullmatch(rf".*/_lease\.json: another run is writing this output: run crashed on \S+ \(pid \d+\) holds its "
                        rf"lease until \S+Z \((599|600) s from now\); {why}, so this run cannot tell whether it still "
                        rf"runs: if it does, wait for it or choose another --output; if it crashed, {retry} once its "
                        r"lease expires", str(refused.value)), refused.value
    assert holder(output) == "crashed"


def test_a_lease_from_before_process_identities_still_parses_and_is_waited_for(output, dead_process):
    """A lease file an older version wrote (run id, host, pid only) of a dead local process: not provably dead."""
    now = time.time()
    old = {"owner": {"run_id": "old-run", "host": dead_process.host, "pid": dead_process.pid},
           "acquired_at": now, "expires_at": now + 600, "expires": "whenever"}
    create_exclusive(output, output.join(LEASE_NAME), json.dumps(old).encode())
    assert LeaseRecord.from_bytes("lease", json.dumps(old).encode()).owner.gone() is None
    with pytest.raises(JobError, match=r"holds its lease until .*; its lease does not say which process holds it, so "
                                       r"this run cannot tell whether it still runs: .*run again with --resume once"):
        OutputLease.acquire(output, LeaseOwner.this_process("next"), ttl_s=60)
    assert holder(output) == "old-run"
