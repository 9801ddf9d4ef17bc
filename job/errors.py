"""The errors a user can fix, which the commands print as one line (``job.cli.run_main``).

- ``JobError``: found before any work (a bad option, dataset or prefix); exit 2.
- ``DataError``: the input's data stopped the run part-way (a damaged file, a null or repeated
  id that only the run could see); exit 3. Parts committed before it are kept for ``--resume``.
- ``StoppedError``: the run stopped part-way for a cause outside the input's data (the store gone, another
  writer's VACUUM deleting the night's files, commits that kept conflicting); exit 4. The parts committed
  so far are kept, and ``--resume`` finishes the run: a scheduler may retry it as it is.
- Ctrl-C: one line and exit 130. While a command still imports (torch alone takes seconds), where
  Python's answer would be a ``KeyboardInterrupt`` traceback from inside some import, and nothing
  has been read or written yet, ``exit_quietly_on_ctrl_c`` (the first thing ``runners`` does when a
  command starts) leaves at once; once its ``main`` runs, ``hand_ctrl_c_to_the_command`` gives Ctrl-C
  back to Python, and ``job.cli.run_main`` answers the ``KeyboardInterrupt`` after the job's clean-up.

Imports nothing but the standard library: ``runners`` imports it first.
"""

from __future__ import annotations

import os
import signal
import threading

EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C
EXIT_STOPPED = 4  # StoppedError: stopped part-way by something outside the data; --resume finishes the run
STARTING = b"interrupted while starting: nothing was read or written\n"


class JobError(RuntimeError):
    """A problem the user can fix before any work runs; printed as one line."""


class SetupError(JobError):
    """A worker cannot run the job as it is set up (its node's CUDA, the image column's type): met once the
    engine runs, yet running again as it is meets it again, so it is refused as any ``JobError`` (exit 2)."""


class DataError(RuntimeError):
    """The input's data stopped the run after work began; one line naming the file and the fix.

    Deterministic: running the same input again meets it again, so engines must not retry it
    (``job.output.parts.FAILED`` carries it to where the rows are gathered instead of raising in a worker).
    """


class StoppedError(RuntimeError):
    """The run stopped after work began, for a cause outside the input's data; one line naming it and the fix.

    ``job.driver`` raises it in place of a ``JobError`` (not a ``SetupError``) or a storage error met once the engine works on the
    images: the exit code then tells a scheduler that running again (with ``--resume``) may well succeed.
    """


def _leave(signum: int, frame: object) -> None:
    # os.write and os._exit: safe at any point of an import, with no half-built module to tear down.
    os.write(2, STARTING)
    os._exit(EXIT_INTERRUPTED)


def exit_quietly_on_ctrl_c() -> None:
    """From now until ``hand_ctrl_c_to_the_command``, Ctrl-C prints ``STARTING`` and exits 130 at once.

    Only where Ctrl-C has Python's default answer: a shell's background job starts with SIGINT
    ignored, and that choice is kept.
    """
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _leave)


def hand_ctrl_c_to_the_command() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` again (where ``exit_quietly_on_ctrl_c`` had taken it), once
    (``interrupt_once``), for the command's own answer. Off the main thread (a test's helper thread) there is nothing
    to hand back."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _leave:
        signal.signal(signal.SIGINT, interrupt_once)


_interrupted = threading.Event()


def interrupt_once(signum: int, frame: object) -> None:
    """Ctrl-C's handler while a command runs: ``KeyboardInterrupt`` the first time; a second Ctrl-C, while the first
    one's clean-up runs (workers stopped, shared memory released, the lease given back), is ignored, so two end as
    one does: its one line and exit 130, never a clean-up cut short (a C++ ``terminate``, a warning of memory left)."""
    if _interrupted.is_set():
        return
    _interrupted.set()
    raise KeyboardInterrupt


def ignore_ctrl_c_from_now() -> None:
    """Once a command has answered a Ctrl-C (``job.cli.run_main``), the later ones are ignored by the OS itself, through
    the interpreter's exit: its finalisation puts any Python handler (``interrupt_once``) back to the default, which a
    late Ctrl-C would die of (exit -2, after the one line was printed)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
