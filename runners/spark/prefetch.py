"""Read ahead in a thread: an iterator's next items made while the caller works on the current one.

Use ``prefetched`` where producing an item (reading and decoding a file's rows) and consuming it
(the model) can overlap, as each Spark task's read and classify do. Errors cross to the caller in
order, so nothing is lost silently; the thread stops when the caller goes away.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

# One batch read ahead overlaps decode with the model (the benchmark's best Spark variant);
# deeper queues only hold more memory once decode keeps up.
DEFAULT_PREFETCH = 1


def prefetched(items: Iterator, depth: int) -> Iterator:
    """Run ``items`` in a thread, ``depth`` items ahead (decode overlaps the model); 0: inline.

    The thread starts at once, not at the first ``next``: the first file is read and decoded
    while the caller loads its model. An exception in the thread is re-raised in the caller,
    after the items before it: no row is lost silently, and a failed read fails the task
    (which Spark retries).
    """
    if depth == 0:
        return iter(items)
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    threading.Thread(target=_fill, args=(items, slots, stop), name="spark-prefetch", daemon=True).start()
    return _drain(slots, stop)


_DONE = object()


def _fill(items: Iterator, slots: queue.Queue, stop: threading.Event) -> None:
    def put(entry: tuple) -> None:
        # Give up when the consumer has gone (its task failed): a reused worker keeps no stuck thread.
        while not stop.is_set():
            try:
                return slots.put(entry, timeout=0.5)
            except queue.Full:
                continue

    try:
        for item in items:
            if stop.is_set():
                return
            put(("item", item))
    except BaseException as e:  # noqa: BLE001 - handed to the consumer, which re-raises it
        put(("error", e))
    else:
        put(("item", _DONE))


def _drain(slots: queue.Queue, stop: threading.Event) -> Iterator:
    try:
        while True:
            kind, item = slots.get()
            if kind == "error":
                raise item  # the reader's own error (a StorageError stays one), with its traceback
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
