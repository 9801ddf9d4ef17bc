"""Who holds an output's lease (``job.lease.lease``), whether that run still lives, and what a run finding it should do.

``LeaseOwner`` names a run and its process: the run id, the host, the pid, and (on Linux) the
machine's boot id and pid namespace and the process's start time, so that another run on the
same host, boot and pid namespace can prove the holder died (``job.lease.processes``): its pid is gone
or names a process started at another time. ``take_over_or_refuse`` decides: such a dead holder
is replaced at once; any other is refused in one line saying until when its lease runs, and
what to do meanwhile, until it expires and ``--resume``/``--overwrite`` may take it over.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass

from job.errors import JobError
from job.lease.processes import MachineIdentity, is_gone, read_stat


@dataclass(frozen=True)
class LeaseOwner:
    """The run holding a lease, and enough about its process to prove, on its own machine, that it died.

    The last three fields are None in leases written before they existed, and where /proc
    cannot say (not Linux): such a holder is never taken for dead.
    """

    run_id: str
    host: str  # the hostname: for people, and one part of the machine's identity
    pid: int
    boot_id: str | None = None  # the kernel's boot id: the same host, and the same boot of it
    pid_namespace: str | None = None  # pids mean one process only within one namespace (one per container)
    start_ticks: int | None = None  # the process's start (clock ticks after boot): a reused pid has another

    def __post_init__(self) -> None:
        if not isinstance(self.pid, int) or not isinstance(self.start_ticks, (int, type(None))):
            raise TypeError(f"pid and start_ticks must be integers, got {self.pid!r} and {self.start_ticks!r}")

    @classmethod
    def this_process(cls, run_id: str) -> LeaseOwner:
        machine, me = MachineIdentity.here(), read_stat(os.getpid())
        if machine is None or me is None:
            return cls(run_id, socket.gethostname(), os.getpid())
        return cls(run_id, machine.hostname, os.getpid(), machine.boot_id, machine.pid_namespace, me.start_ticks)

    def gone(self) -> bool | None:
        """True if this owner's process has ended, False if it runs, None if this process cannot tell."""
        if self.start_ticks is None or not self.on_this_machine():
            return None
        return is_gone(self.pid, self.start_ticks)

    def on_this_machine(self) -> bool:
        """Whether this owner's pid names a process here: same host, same boot, same pid namespace."""
        return MachineIdentity(self.host, self.boot_id, self.pid_namespace) == MachineIdentity.here()

    def __str__(self) -> str:
        return f"run {self.run_id} on {self.host} (pid {self.pid})"


@dataclass(frozen=True)
class LeaseRecord:
    """What ``_lease.json`` holds."""

    owner: LeaseOwner
    acquired_at: float  # Unix seconds
    expires_at: float  # Unix seconds; renewals move it

    def to_bytes(self) -> bytes:
        return json.dumps({**asdict(self), "expires": when(self.expires_at)}, indent=2).encode()

    @classmethod
    def from_bytes(cls, uri: str, data: bytes) -> LeaseRecord:
        try:
            raw = json.loads(data)
            return cls(LeaseOwner(**raw["owner"]), float(raw["acquired_at"]), float(raw["expires_at"]))
        except (ValueError, KeyError, TypeError) as e:
            raise JobError(f"{uri}: not a lease this job wrote ({e}); if no run is writing this output, delete it") from e


def take_over_or_refuse(uri: str, holder: LeaseRecord, take_over_expired: bool) -> str:
    """Return what to tell the user once this run replaced ``holder``'s lease; raise JobError if it may not."""
    gone = holder.owner.gone()
    if gone:
        return f"{uri}: {holder.owner} is no longer running (its pid is gone or reused): taking over its lease"
    left = holder.expires_at - time.time()
    if left > 0:
        raise JobError(_held_text(uri, holder, left, gone, take_over_expired))
    if not take_over_expired:
        raise JobError(f"{uri}: {holder.owner} held this output's lease until {when(holder.expires_at)} and stopped "
                       "renewing it (it crashed?); pass --resume to take over and finish its work")
    return f"{uri}: {holder.owner} stopped renewing its lease at {when(holder.expires_at)}: taking it over"


def _held_text(uri: str, holder: LeaseRecord, left: float, gone: bool | None, take_over_expired: bool) -> str:
    """The refusal while the holder's lease runs: it runs (wait), or this process cannot tell (wait, or retry after expiry)."""
    held = (f"{uri}: another run is writing this output: {holder.owner} holds its lease until "
            f"{when(holder.expires_at)} ({left:.0f} s from now)")
    if gone is False:
        return f"{held} and is still running; wait for it to finish, or choose another --output"
    if holder.owner.start_ticks is None:
        why = "its lease does not say which process holds it"
    elif holder.owner.on_this_machine():
        why = "its process is hidden from this one"
    else:
        why = "it is on another host or in another container"
    retry = "run this again" if take_over_expired else "run again with --resume"
    return (f"{held}; {why}, so this run cannot tell whether it still runs: if it does, wait for it or choose "
            f"another --output; if it crashed, {retry} once its lease expires")


def when(unix_s: float) -> str:
    """A Unix time as UTC ISO 8601, to the second: what lease messages and files show."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_s))
