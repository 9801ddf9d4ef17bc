"""Ctrl-C ends a job with its one line and exit 130, whatever the engine is doing: a terminal sends SIGINT to the
whole process group (the driver, the JVM, every Python worker), and so does this test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.unit.test_layers import ROOT

INTERRUPTED = "interrupted: no manifest written; re-run with --resume to keep the committed parts and finish"


def interrupted_once_running(module: str, tmp_path, *argv: str, times: int = 1) -> tuple[int, str]:
    """Start ``python -m module`` on the built-in sample, Ctrl-C its process group once it runs (its ``input:`` line
    is out), ``times`` times a tenth of a second apart; (exit code, stderr)."""
    log = tmp_path / "stderr"
    with open(log, "w") as err:
        process = subprocess.Popen([sys.executable, "-m", module, "--output", str(tmp_path / "out"), *argv], cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 240
        while "\ninput: " not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # into the run: the engine's tasks have started
        for _ in range(times):
            os.killpg(process.pid, signal.SIGINT)
            time.sleep(0.1)
        code = process.wait(timeout=120)
    return code, log.read_text()


# What a clean-up cut short or left to the interpreter's exit prints: a thread still in torch's C++ as an interpreter
# finalises (the driver's model call, a worker's queue), multiprocessing's tracker finding shared memory (semaphores,
# queues) its process did not release.
LEFT_BEHIND = ("Traceback", "ERROR", "terminate called", "resource_tracker")


@pytest.mark.parametrize(("module", "argv"), [("runners.spark_job", ()), ("runners.local_job", ("--workers", "1"))])
def test_ctrl_c_is_one_line_and_exit_130(module, argv, tmp_path):
    code, err = interrupted_once_running(module, tmp_path, *argv)
    after = err.split("\ninput: ", 1)[1]
    assert code == 130 and after.rstrip().endswith(INTERRUPTED), err
    assert not any(word in after for word in LEFT_BEHIND), err


def test_two_ctrl_cs_end_as_one_does(tmp_path):
    """A user who presses Ctrl-C twice: the second, while the first one's clean-up runs, changes nothing."""
    code, err = interrupted_once_running("runners.local_job", tmp_path, "--workers", "1", times=2)
    after = err.split("\ninput: ", 1)[1]
    assert code == 130 and after.rstrip().endswith(INTERRUPTED), err
    assert not any(word in after for word in LEFT_BEHIND), err


def interrupted_after(seconds: float, tmp_path, *argv: str) -> tuple[int, str]:
    """Start the local engine on 6 images of the built-in sample, Ctrl-C its process group ``seconds`` after the
    start, as a terminal does; (exit code, stderr)."""
    log = tmp_path / f"stderr-{seconds}"
    with open(log, "w") as err:
        # SIGINT restored in the child: a test run from a shell's background job would have it ignored, testing nothing.
        process = subprocess.Popen([sys.executable, "-m", "runners.local_job", "--output", str(tmp_path / f"out-{seconds}"),
                                    "--limit", "6", "--weights", "random", *argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=err, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(seconds)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=120)
    return code, log.read_text()


def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path):
    """From the first import on (imports take the first seconds): never a KeyboardInterrupt traceback."""
    for seconds in (0.2, 0.7, 1.5, 3.0):
        code, err = interrupted_after(seconds, tmp_path, "--workers", "1")
        assert code == 130 and "Traceback" not in err, (seconds, err)
        assert err.rstrip().splitlines()[-1].startswith("interrupted"), (seconds, err)
