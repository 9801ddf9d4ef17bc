"""``--decode auto``'s loop, engine-neutral: the predictor measures how hungry its device is, the decoders read it.

The predictor wraps each model call in an ``IdleMeter``, which posts a ``DeviceFeedback`` about
once a window: the share of the window no call was running (the device waited for input) and
whether a batch was always waiting (it is the bottleneck). Each decoder's ``Preprocess`` asks a
``FeedbackSource`` after every batch and hands what is new to its router (``preprocess.routing``).

Engines carry the word from predictors to decoders their own way:
- Ray: a small actor between actor pools (``runners/ray/feedback.py``);
- Spark: the decode thread and the model share one Python worker: ``LatestFeedback``;
- the local baseline: DataLoader worker processes read shared memory: ``SharedFeedback``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from multiprocessing.context import BaseContext

from preprocess.routing import DeviceFeedback

WINDOW_S = 1.0  # how often a predictor posts: a routing decision takes ~2 s to show anyway
BACKLOGGED = 0.9  # every call slot busy over 90% of a window: a batch was always waiting
QUEUED_WHEN_BACKLOGGED = 2  # what the router's policy calls a backlog (AutoPolicy.queue_high)


class IdleMeter:
    """Around each model call: time with no call running, and time with every slot busy, per window."""

    def __init__(self, post: Callable[[DeviceFeedback], None], concurrency: int = 1,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.post, self.concurrency, self.clock = post, concurrency, clock
        self.lock = threading.Lock()  # a Ray GPU actor runs two calls at once
        self.running, self.changed = 0, clock()
        self.window_start, self.idle, self.full = self.changed, 0.0, 0.0

    def __enter__(self) -> IdleMeter:
        self._step(+1)
        return self

    def __exit__(self, *exc: object) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        with self.lock:
            now = self.clock()
            spent = now - self.changed
            self.idle += spent if self.running == 0 else 0.0
            self.full += spent if self.running >= self.concurrency else 0.0
            self.running, self.changed = self.running + delta, now
            window = now - self.window_start
            if window >= WINDOW_S:
                queued = QUEUED_WHEN_BACKLOGGED if self.full / window >= BACKLOGGED else 0
                self.post(DeviceFeedback(self.idle / window, queued))
                self.window_start, self.idle, self.full = now, 0.0, 0.0


class LatestFeedback:
    """One process: the latest word, posted by the model's thread, read by a decoding thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: DeviceFeedback | None = None

    def post(self, feedback: DeviceFeedback) -> None:
        with self._lock:
            self._latest = feedback

    def poll(self) -> DeviceFeedback | None:
        """The word posted since the last poll, or None."""
        with self._lock:
            latest, self._latest = self._latest, None
        return latest


class SharedFeedback:
    """Across processes (DataLoader workers): the latest word in shared memory, passed to them at start."""

    def __init__(self, context: BaseContext) -> None:
        self._values = context.Array("d", 3)  # idle fraction, queued batches, posts so far
        self._seen = 0.0  # per process: the posts this reader has taken

    def post(self, feedback: DeviceFeedback) -> None:
        with self._values.get_lock():
            self._values[0], self._values[1] = feedback.idle_fraction, feedback.queued_batches
            self._values[2] += 1

    def poll(self) -> DeviceFeedback | None:
        """The word posted since this process's last poll, or None."""
        with self._values.get_lock():
            idle, queued, posts = self._values[:]
        if posts == self._seen:
            return None
        self._seen = posts
        return DeviceFeedback(idle, int(queued))
