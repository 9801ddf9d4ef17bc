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


def test_a_finished_call_is_not_held_by_the_thread_that_ran_it():
    """The call's closure holds the stage and its model: a thread kept for the next call must let it go."""
    import gc
    import weakref

    class Model:
        pass

    model = Model()
    held = weakref.ref(model)
    assert TimeLimited(5.0)(lambda: model) is model
    del model
    deadline = time.monotonic() + 2.0
    while held() is not None and time.monotonic() < deadline:  # the thread drops it right after handing it over
        gc.collect()
        time.sleep(0.01)
    assert held() is None, "the model call's thread still holds the last call"
