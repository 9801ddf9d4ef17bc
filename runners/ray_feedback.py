"""``--decode auto`` on Ray: the predictors tell the decoders how hungry the device is.

A tiny named actor (``DecodeBoard``, no CPU) holds the latest word from the predictor actors:
the share of the last window their device stage waited for input, and whether a batch was
always queued behind the running one. Each predictor measures that with an ``IdleMeter``
around its calls and posts it about once a second (fire and forget); each decoder asks about
once a second without waiting (``BoardReader``) and hands the answer to its router
(``preprocess.routing``), which moves JPEGs towards the device when it idles and back towards
the CPUs when it is the bottleneck.
"""

from __future__ import annotations

import threading
import time

import ray

from preprocess.routing import DeviceFeedback

BOARD_NAME = "batch-inference-decode-board"
WINDOW_S = 1.0  # how often predictors post and decoders ask: a routing decision takes ~2 s anyway
BACKLOGGED = 0.9  # both calls of an actor running over 90% of a window: a batch was always waiting
QUEUED_WHEN_BACKLOGGED = 2  # what the router's policy calls a backlog (AutoPolicy.queue_high)


@ray.remote(num_cpus=0)
class DecodeBoard:
    def __init__(self) -> None:
        self.latest: dict[str, tuple[float, int]] = {}  # predictor -> (idle fraction, queued batches)

    def post(self, predictor: str, idle_fraction: float, queued_batches: int) -> None:
        self.latest[predictor] = (idle_fraction, queued_batches)

    def read(self) -> tuple[float, int] | None:
        """The predictors' mean idle fraction and their smallest queue (the hungriest one decides)."""
        if not self.latest:
            return None
        values = list(self.latest.values())
        return sum(idle for idle, _ in values) / len(values), min(queued for _, queued in values)


def start_board(run_id: str) -> ray.actor.ActorHandle:
    return DecodeBoard.options(name=f"{BOARD_NAME}-{run_id}").remote()


class IdleMeter:
    """Per predictor actor: time with no call running, and time with two, over each window."""

    def __init__(self, run_id: str, predictor: str, concurrency: int) -> None:
        self.board = ray.get_actor(f"{BOARD_NAME}-{run_id}")
        self.predictor, self.concurrency = predictor, concurrency
        self.lock = threading.Lock()
        self.running, self.changed = 0, time.perf_counter()
        self.window_start, self.idle, self.full = self.changed, 0.0, 0.0

    def __enter__(self) -> IdleMeter:
        self._step(+1)
        return self

    def __exit__(self, *exc: object) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        with self.lock:
            now = time.perf_counter()
            spent = now - self.changed
            self.idle += spent if self.running == 0 else 0.0
            self.full += spent if self.running >= self.concurrency else 0.0
            self.running, self.changed = self.running + delta, now
            if now - self.window_start >= WINDOW_S:
                self._post(now - self.window_start)
                self.window_start, self.idle, self.full = now, 0.0, 0.0

    def _post(self, window: float) -> None:
        queued = QUEUED_WHEN_BACKLOGGED if self.full / window >= BACKLOGGED else 0
        self.board.post.remote(self.predictor, self.idle / window, queued)


class BoardReader:
    """Per decoder actor: the board's latest word, asked for at most once a window, never waited on."""

    def __init__(self, run_id: str) -> None:
        self.board = ray.get_actor(f"{BOARD_NAME}-{run_id}")
        self.pending: ray.ObjectRef | None = None
        self.asked = 0.0

    def poll(self) -> DeviceFeedback | None:
        """New feedback if an answer has come since the last call; asks again once a window has passed."""
        feedback = None
        if self.pending is not None and ray.wait([self.pending], timeout=0)[0]:
            answer, self.pending = ray.get(self.pending), None
            feedback = DeviceFeedback(*answer) if answer is not None else None
        if self.pending is None and time.perf_counter() - self.asked >= WINDOW_S:
            self.pending, self.asked = self.board.read.remote(), time.perf_counter()
        return feedback
