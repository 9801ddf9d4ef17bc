"""Named steps of a night where a test stops the real process: killed with SIGKILL, or held while another writer commits.

A night's promises (every input id in the table once, deleted rows absent, the table readable, the documented exit
code) must hold whatever step a kill or another writer's commit lands on. Raising an exception in-process proves
less: ``finally`` blocks and context managers still run, and a real kill runs none of them. So the driver names its
steps (``reached("committed")``), and a test that starts a night as a child process sets ``SBI_FAILPOINT``:

- ``STEP:kill``: the process sends itself SIGKILL on reaching STEP (``part-written`` counts: ``part-written:kill:2``
  dies on the second part);
- ``STEP:pause:FOLDER``: on reaching STEP the process writes ``FOLDER/STEP.reached`` and waits until the test writes
  ``FOLDER/STEP.go`` (after its DELETE, OPTIMIZE or append), then goes on.

Unset (every real run), ``reached`` is one dictionary lookup. The idea is the failpoints of databases (FoundationDB's
buggify, TiKV's fail-rs): fault injection at named points of the real code path, off unless asked for.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENV = "SBI_FAILPOINT"
# The steps of a night, in order (job.driver, job.output.parts, job.night.finish): what a test may name.
STEPS = ("planned", "part-written", "checked", "before-commit", "committed", "history-written", "manifest-written")
PAUSE_LIMIT_S = 600.0  # a test that never says "go" must not leave a night waiting for ever
_counts: dict[str, int] = {}


def reached(step: str) -> None:
    """The night reached ``step`` (one of ``STEPS``): do what ``SBI_FAILPOINT`` asks there, if anything."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    name, _, action = wanted.partition(":")
    if name != step:
        return
    _counts[wanted] = _counts.get(wanted, 0) + 1  # by the whole setting: a process that runs nights, a test, counts anew
    kind, _, argument = action.partition(":")
    if kind == "kill" and _counts[wanted] >= int(argument or 1):
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "pause" and _counts[wanted] == 1:
        _pause(Path(argument), step)


def _pause(folder: Path, step: str) -> None:
    (folder / f"{step}.reached").write_text(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not (folder / f"{step}.go").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{ENV}: nobody wrote {folder / (step + '.go')} in {PAUSE_LIMIT_S:.0f} s")
        time.sleep(0.02)
