"""job.stages.TimeLimited: a model call past the limit is abandoned and answered None; the next call runs."""

from __future__ import annotations

import threading
import time

import pytest

from job.stages import TimeLimited


def test_calls_within_the_limit_run_on_one_kept_thread_per_caller():
    limited = TimeLimited(5.0)
    threads = {limited(lambda: threading.get_ident()) for _ in range(3)}
    assert len(threads) == 1 and threads != {threading.get_ident()}


def test_a_call_past_the_limit_is_abandoned_and_the_next_runs_on_a_new_thread():
    limited, release = TimeLimited(0.2), threading.Event()
    began = time.monotonic()
    assert limited(lambda: release.wait(30)) is None
    assert time.monotonic() - began < 5
    stuck_and_next = limited(lambda: threading.get_ident())
    release.set()  # the abandoned call ends in the background
    assert isinstance(stuck_and_next, int)


def test_the_calls_exception_is_raised_in_the_caller():
    def fails():
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        TimeLimited(5.0)(fails)
