"""Facts about processes on this machine, read from Linux's ``/proc``: enough to prove one is gone.

Use it where a record names a process that may have died without cleaning up: a lease's holder
(``job.lease.lease_holder``), a driver whose helpers must die with it (``job.lease.reaper``).

A pid names a process only on one machine, in one boot, in one pid namespace (a container has
its own; containers on one machine share the boot), and only while that process lives: a pid is
reused once its process is gone. So a process is identified by its machine (``MachineIdentity``:
hostname, boot id, pid namespace), its pid, and its start time in clock ticks after boot, which
a reused pid does not share. Where ``/proc`` cannot tell (not Linux, another host or
container, a pid hidden by ``hidepid``), the answer is "cannot tell", never "gone".
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

BOOT_ID = "/proc/sys/kernel/random/boot_id"  # new at every boot; the same in every container of one boot
EXITED_STATES = ("Z", "X")  # zombie (exited, not yet reaped by its parent) and dead


@dataclass(frozen=True)
class ProcessStat:
    """The fields of ``/proc/<pid>/stat`` this module needs."""

    state: str  # R, S, D, Z, ...
    parent: int  # the parent's pid
    start_ticks: int  # when it started, in clock ticks after boot (the fork, not the exec)


@dataclass(frozen=True)
class MachineIdentity:
    """Where a pid means the same process: one host, one boot, one pid namespace."""

    hostname: str
    boot_id: str
    pid_namespace: str  # e.g. "pid:[4026531836]", the link /proc/self/ns/pid names; unique among live namespaces

    @classmethod
    def here(cls) -> MachineIdentity | None:
        """This process's machine, or None where /proc cannot say (not Linux, /proc from another namespace)."""
        try:
            with open(BOOT_ID) as f:
                boot_id = f.read().strip()
            namespace = os.readlink("/proc/self/ns/pid")
            with open("/proc/self/stat") as f:
                visible_pid = int(f.read().split(" ", 1)[0])
        except (OSError, ValueError):
            return None
        if visible_pid != os.getpid():  # this /proc shows another pid namespace's processes: its pids are not ours
            return None
        return cls(socket.gethostname(), boot_id, namespace)


def read_stat(pid: int) -> ProcessStat | None:
    """``/proc/<pid>/stat``'s state, parent and start; None if no such process is visible."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # Field 2, the command name, is in parentheses and may hold spaces or parentheses itself.
    fields = text[text.rindex(")") + 2:].split()
    return ProcessStat(state=fields[0], parent=int(fields[1]), start_ticks=int(fields[19]))


def is_gone(pid: int, start_ticks: int) -> bool | None:
    """Whether the process that had ``pid`` and started at ``start_ticks`` (on this machine) has ended.

    True: no process has that pid, or it has exited (a zombie), or the pid now names a process
    that started at another time. False: it runs. None: this process cannot see it.
    """
    if pid <= 0:
        return None  # kill(0 or -1, ...) would name process groups, not a process
    if not _exists(pid):
        return True
    stat = read_stat(pid)
    if stat is None:  # it ended between the two looks, or /proc hides it (mounted with hidepid)
        return True if not _exists(pid) else None
    return stat.state in EXITED_STATES or stat.start_ticks != start_ticks


def descendants(*roots: int) -> dict[int, int]:
    """The live processes below the ``roots`` now, as {pid: start ticks}; {} where /proc cannot be read."""
    children: dict[int, list[tuple[int, int]]] = {}
    for pid in _pids():
        stat = read_stat(pid)
        if stat is not None and stat.state not in EXITED_STATES:
            children.setdefault(stat.parent, []).append((pid, stat.start_ticks))
    found, frontier = {}, list(roots)
    while frontier:
        for child, start in children.get(frontier.pop(), []):
            if child not in found:
                found[child] = start
                frontier.append(child)
    return found


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: checks the pid, delivers nothing
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
