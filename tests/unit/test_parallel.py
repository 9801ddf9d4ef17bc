"""storage.parallel.map_in_order: the results in order, a bounded number of calls pending, the first error raised."""

from __future__ import annotations

import threading
import time

import pytest

from storage.parallel import CALLS_PER_THREAD, map_in_order


def test_results_come_in_the_items_order_whatever_order_the_calls_end_in():
    def slow_for_small(i: int) -> int:
        time.sleep(0.002 * (10 - i % 10))
        return i * i

    assert list(map_in_order(slow_for_small, range(100), threads=8)) == [i * i for i in range(100)]


def test_no_more_calls_are_submitted_than_the_window_while_the_first_is_unread():
    started, lock = [], threading.Lock()

    def record(i: int) -> int:
        with lock:
            started.append(i)
        return i

    results = map_in_order(record, range(10_000), threads=2)
    assert next(results) == 0
    time.sleep(0.2)  # every submitted call has run by now
    assert len(started) <= 2 * CALLS_PER_THREAD + 1  # not 10,000 futures made up front
    assert list(results) == list(range(1, 10_000))


def test_the_first_error_is_raised_and_calls_not_started_are_not_made():
    made = []

    def fail_at_3(i: int) -> int:
        made.append(i)
        if i == 3:
            raise ValueError("item 3 is bad")
        time.sleep(0.01)
        return i

    with pytest.raises(ValueError, match="item 3 is bad"):
        list(map_in_order(fail_at_3, range(1_000), threads=1))
    assert len(made) < 1_000
