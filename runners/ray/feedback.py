"""``--decode auto`` on Ray: the word from the predictor actors to the decoder actors.

A tiny named actor (``DecodeBoard``, no CPU) holds the latest ``DeviceFeedback`` of each
predictor, which posts it through ``job.feedback.IdleMeter`` about once a second (fire and
forget, ``poster``). Each decoder asks about once a second without waiting (``BoardReader``,
a ``FeedbackSource`` for ``job.stages.Preprocess``), and its router moves JPEGs towards the
device when it idles and back towards the CPUs when it is the bottleneck.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ray

from job.feedback import WINDOW_S
from preprocess.routing import DeviceFeedback
from runners.ray.placement import on_driver_node

BOARD_NAME = "batch-inference-decode-board"


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
    return DecodeBoard.options(name=f"{BOARD_NAME}-{run_id}", scheduling_strategy=on_driver_node()).remote()


def poster(run_id: str, predictor: str) -> Callable[[DeviceFeedback], None]:
    """For a predictor actor's ``IdleMeter``: post its word to the run's board without waiting."""
    board = ray.get_actor(f"{BOARD_NAME}-{run_id}")
    return lambda feedback: board.post.remote(predictor, feedback.idle_fraction, feedback.queued_batches)


class BoardReader:
    """Per decoder actor: the board's latest word, asked for at most once a window, never waited on."""

    def __init__(self, run_id: str) -> None:
        self.board = ray.get_actor(f"{BOARD_NAME}-{run_id}")
        self.pending: ray.ObjectRef | None = None
        self.asked = 0.0

    def __call__(self) -> DeviceFeedback | None:
        """New feedback if an answer has come since the last call; asks again once a window has passed."""
        feedback = None
        if self.pending is not None and ray.wait([self.pending], timeout=0)[0]:
            answer, self.pending = ray.get(self.pending), None
            feedback = DeviceFeedback(*answer) if answer is not None else None
        if self.pending is None and time.perf_counter() - self.asked >= WINDOW_S:
            self.pending, self.asked = self.board.read.remote(), time.perf_counter()
        return feedback
