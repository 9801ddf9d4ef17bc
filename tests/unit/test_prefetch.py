"""runners.spark.prefetch: items read ahead in a thread come out in order, and so does the reader's error."""

from __future__ import annotations

import threading

import pytest

from runners.spark.prefetch import prefetched


def failing_after(count: int):
    yield from range(count)
    raise OSError("the third file is gone")


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_every_item_comes_out_in_order(depth):
    assert list(prefetched(iter(range(10)), depth)) == list(range(10))


@pytest.mark.parametrize("depth", [0, 2])
def test_the_readers_error_comes_after_the_items_before_it(depth):
    got = []
    with pytest.raises(OSError, match="the third file is gone"):
        for item in prefetched(failing_after(2), depth):
            got.append(item)
    assert got == [0, 1]


def test_reading_starts_before_the_first_next():
    started = threading.Event()

    def items():
        started.set()
        yield "first"

    batches = prefetched(items(), 1)
    assert started.wait(timeout=10)  # the caller has not asked yet: its model loads meanwhile
    assert list(batches) == ["first"]


def test_the_thread_ends_when_the_caller_goes_away():
    def endless():
        while True:
            yield "batch"

    batches = prefetched(endless(), 1)
    next(batches)
    readers = [t for t in threading.enumerate() if t.name == "spark-prefetch" and t.is_alive()]
    assert readers
    batches.close()  # the task failed: a reused Python worker must not keep a reader stuck on a full queue
    for thread in readers:
        thread.join(timeout=10)
        assert not thread.is_alive()
