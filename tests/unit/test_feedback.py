"""--decode auto's word from the model to the decoders: measured per window, carried in-process or across processes."""

from __future__ import annotations

import multiprocessing

from job.feedback import BACKLOGGED, QUEUED_WHEN_BACKLOGGED, IdleMeter, LatestFeedback, SharedFeedback
from preprocess.routing import DeviceFeedback
from tests.common.clock import ManualClock


def test_the_meter_posts_the_idle_share_once_a_window():
    clock, posted = ManualClock(), []
    meter = IdleMeter(posted.append, concurrency=1, clock=clock)
    clock.now = 0.75  # waited 0.75 s for the first batch
    with meter:
        clock.now = 1.0
    assert posted == [DeviceFeedback(0.75, 0)]


def test_a_device_always_busy_is_reported_backlogged():
    clock, posted = ManualClock(), []
    meter = IdleMeter(posted.append, concurrency=1, clock=clock)
    with meter:
        clock.now = BACKLOGGED + 0.05
    with meter:
        clock.now = 1.5
    assert posted[-1].queued_batches == QUEUED_WHEN_BACKLOGGED and posted[-1].idle_fraction < 0.1


def test_latest_feedback_hands_each_word_once():
    board = LatestFeedback()
    assert board.poll() is None
    board.post(DeviceFeedback(0.5, 0))
    assert board.poll() == DeviceFeedback(0.5, 0) and board.poll() is None


def _read_in_child(board: SharedFeedback, out: multiprocessing.Queue) -> None:
    out.put((board.poll(), board.poll()))


def test_shared_feedback_reaches_a_spawned_worker():
    context = multiprocessing.get_context("spawn")
    board = SharedFeedback(context)
    board.post(DeviceFeedback(0.25, 2))
    out = context.Queue()
    child = context.Process(target=_read_in_child, args=(board, out))
    child.start()
    first, second = out.get(timeout=60)
    child.join(timeout=60)
    assert first == DeviceFeedback(0.25, 2) and second is None
