"""Take a driver's helper processes down with it when it dies without cleaning up (SIGKILL, the OOM killer).

Use it around whatever starts long-lived helpers that would outlive a killed driver. A local Ray
that ``ray.init()`` starts is one: Ray fate-shares its own daemons with the driver
(PR_SET_PDEATHSIG), but not what they start; the raylet's dashboard and runtime-env agents see
the raylet die, then wait about a minute on the GCS, dead too, before they exit, and a local Ray
started meanwhile runs beside them. ::

    reaper = Reaper.start()  # before starting the helpers
    ...start them, work, shut them down...
    reaper.stop()  # the driver cleaned up itself

``start`` runs a watchdog (``python -m job.lease.reaper <driver pid>``) in its own session, so that a
terminal's Ctrl-C or hang-up does not end it before the driver, and returns once it looked
first. Every ``POLL_S`` it notes the driver's descendants started since (older ones are not
its business). The driver holds the write end of the watchdog's stdin: when that closes
without a goodbye, the driver has died, and the watchdog SIGKILLs every noted process that is
still the same process (pid and start time; ``job.lease.processes``) and all they started since.
Linux only; elsewhere ``start`` returns None and nothing is watched.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

from job.lease.processes import MachineIdentity, descendants, is_gone, read_stat

# How often the watchdog looks at the driver's descendants (one pass over /proc, a few ms). What
# the driver itself starts less than this before it dies is missed (what noted helpers start is not).
POLL_S = 1.0
READY, GOODBYE = b"watching\n", b"stop\n"
STOP_TIMEOUT_S = 5.0  # the watchdog answers a goodbye within one read


class Reaper:
    """A running watchdog for this process; made by ``start``."""

    def __init__(self, watchdog: subprocess.Popen) -> None:
        self.watchdog = watchdog

    @classmethod
    def start(cls) -> Reaper | None:
        """Start watching this process's helpers started from now on; None where /proc cannot tell processes apart."""
        if MachineIdentity.here() is None:
            return None
        # The watchdog imports this very package, wherever the driver found it.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        watchdog = subprocess.Popen([sys.executable, "-m", "job.lease.reaper", str(os.getpid())], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, start_new_session=True, env={**os.environ, "PYTHONPATH": path})
        ready = watchdog.stdout.readline()  # its first look is done: from here on, it sees what this process starts
        watchdog.stdout.close()
        if ready != READY:
            watchdog.kill()
            raise RuntimeError(f"the watchdog that ends this driver's helpers if it is killed did not start (exit code "
                               f"{watchdog.wait()}; its error is above)")
        return cls(watchdog)

    def stop(self) -> None:
        """Say goodbye: the helpers were shut down; the watchdog ends without killing anything."""
        try:
            self.watchdog.stdin.write(GOODBYE)
            self.watchdog.stdin.close()
        except BrokenPipeError:
            pass  # it has ended already
        try:
            self.watchdog.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
            self.watchdog.wait()


def watch(driver: int) -> None:
    """The watchdog: note the driver's new descendants until it says goodbye, or reap them if it died."""
    me = os.getpid()
    # Helpers the driver started before the watchdog are not its business. Ticks are 10 ms: what started
    # in the watchdog's own tick is older than it, and ``start`` returns only after this first look, later.
    since = read_stat(me).start_ticks
    noted = _note(driver, since, me, {})
    os.write(sys.stdout.fileno(), READY)
    while True:
        readable, _, _ = select.select([sys.stdin.fileno()], [], [], POLL_S)
        if readable:
            if not os.read(sys.stdin.fileno(), len(GOODBYE)):  # end of file without a goodbye: the driver died
                reap(noted)
            return
        noted = _note(driver, since, me, noted)


def _note(driver: int, since: int, me: int, noted: dict[int, int]) -> dict[int, int]:
    """``noted`` (pid -> start ticks) less what ended, plus the driver's descendants started after ``since``, but ``me``."""
    kept = {pid: start for pid, start in noted.items() if is_gone(pid, start) is False}
    return kept | {pid: start for pid, start in descendants(driver).items() if start > since and pid != me}


def reap(noted: dict[int, int]) -> None:
    """SIGKILL the noted processes (pid -> start ticks) that still run, and whatever they started since."""
    alive = [pid for pid, start in noted.items() if is_gone(pid, start) is False]
    targets = {pid: noted[pid] for pid in alive} | descendants(*alive)
    for pid, start in targets.items():
        if is_gone(pid, start) is False:  # not a pid reused since it was noted
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue  # it ended meanwhile


if __name__ == "__main__":
    watch(int(sys.argv[1]))
