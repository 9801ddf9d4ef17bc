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


def interrupted_once_running(module: str, tmp_path, *argv: str) -> tuple[int, str]:
    """Start ``python -m module`` on the built-in sample, Ctrl-C its process group once it runs (its ``input:`` line
    is out); (exit code, stderr)."""
    log = tmp_path / "stderr"
    with open(log, "w") as err:
        process = subprocess.Popen([sys.executable, "-m", module, "--output", str(tmp_path / "out"), *argv], cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 240
        while "\ninput: " not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # into the run: the engine's tasks have started
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=120)
    return code, log.read_text()


@pytest.mark.parametrize(("module", "argv"), [("runners.spark_job", ()), ("runners.local_job", ("--workers", "1"))])
def test_ctrl_c_is_one_line_and_exit_130(module, argv, tmp_path):
    code, err = interrupted_once_running(module, tmp_path, *argv)
    after = err.split("\ninput: ", 1)[1]
    assert code == 130 and after.rstrip().endswith(INTERRUPTED), err
    assert "Traceback" not in after and "ERROR" not in after, err
