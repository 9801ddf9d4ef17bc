"""Read many small things at once, in order, with the memory of a few thousand: ``map_in_order``.

Use it where the driver reads one small thing per file (a footer, a part's record, an id column)
for every file of a prefix: many requests in flight hide a store's latency. ``Executor.map``
would do the same but submits every call up front, and each pending call holds a future of
about 2 KB: a million files would hold 2 GB of futures before the first one is read. Here at
most ``window`` calls are pending at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# Pending calls per thread: enough that a thread never waits for work, few enough to hold little.
CALLS_PER_THREAD = 8


def map_in_order(call: Callable[[Item], Result], items: Iterable[Item], threads: int) -> Iterator[Result]:
    """``call(item)`` for each item on ``threads`` threads, yielded in the items' order; the first error is raised."""
    items = iter(items)
    window = max(1, threads) * CALLS_PER_THREAD
    pending: deque[Future[Result]] = deque()
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        try:
            for item in items:
                pending.append(pool.submit(call, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error (or a caller that stops early): the calls not started yet are not made
            for future in pending:
                future.cancel()
