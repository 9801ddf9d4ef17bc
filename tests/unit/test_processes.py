"""What /proc tells about processes: who is gone, who is below whom, which machine and namespace this is."""

from __future__ import annotations

import os
import socket
import subprocess

from job.lease.processes import MachineIdentity, descendants, is_gone, read_stat


def test_a_process_is_gone_once_it_ended_or_its_pid_names_another():
    child = subprocess.Popen(["sleep", "60"])
    started = read_stat(child.pid).start_ticks
    assert is_gone(child.pid, started) is False
    assert is_gone(child.pid, started + 1) is True  # the pid now names a process that started at another time
    child.kill()
    while read_stat(child.pid).state != "Z":
        pass
    assert is_gone(child.pid, started) is True  # a zombie: ended, not yet reaped
    child.wait()
    assert is_gone(child.pid, started) is True
    assert is_gone(0, started) is None and is_gone(-1, started) is None  # never process groups


def test_descendants_are_children_and_their_children():
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & exec sleep 60"])
    try:
        while not descendants(shell.pid):
            pass
        (grandchild, start), = descendants(shell.pid).items()
        assert read_stat(grandchild).parent == shell.pid and read_stat(grandchild).start_ticks == start
        assert descendants(os.getpid())[shell.pid] == read_stat(shell.pid).start_ticks and grandchild in descendants(os.getpid())
    finally:
        os.kill(grandchild, 9)
        shell.kill()
        shell.wait()


def test_this_machine_is_its_host_boot_and_pid_namespace():
    here = MachineIdentity.here()
    assert here.hostname == socket.gethostname() and here.pid_namespace == os.readlink("/proc/self/ns/pid")
    assert len(here.boot_id) == 36  # a UUID, new at each boot
