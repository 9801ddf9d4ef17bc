"""``--decode`` routing: forced modes, auto's share adapting to feedback, deterministic with a fake clock."""

from __future__ import annotations

import pytest

from preprocess import preprocess_batch
from preprocess.split_decode import preprocess_routed
from preprocess.routing import AutoPolicy, DecodeRouter, DeviceFeedback
from tests.common.clock import ManualClock
from tests.common.datasets import mixed_rows

STARVED = DeviceFeedback(idle_fraction=0.4, queued_batches=0)
BACKLOGGED = DeviceFeedback(idle_fraction=0.0, queued_batches=4)
BALANCED = DeviceFeedback(idle_fraction=0.01, queued_batches=1)


def test_forced_modes_ignore_feedback():
    for mode, share in (("cpu", 1.0), ("gpu", 0.0)):
        router = DecodeRouter(mode)
        router.feedback(STARVED)
        router.feedback(BACKLOGGED)
        assert router.cpu_share == share
    assert DecodeRouter("cpu").split([1, 2, 3]) == ([1, 2, 3], [])
    assert DecodeRouter("gpu").split([1, 2, 3]) == ([], [1, 2, 3])


def test_unknown_mode_names_the_choices():
    with pytest.raises(ValueError, match="cpu, gpu, auto"):
        DecodeRouter("fast")


def test_auto_moves_work_to_the_device_when_it_starves_and_back_when_it_is_backlogged():
    clock = ManualClock()
    router = DecodeRouter("auto", AutoPolicy(initial_cpu_share=0.5, step=0.1, min_interval_s=2), clock)
    for _ in range(3):
        clock.now += 2
        router.feedback(STARVED)
    assert router.cpu_share == pytest.approx(0.2)
    for _ in range(5):
        clock.now += 2
        router.feedback(BACKLOGGED)  # this worker did nothing since: it has headroom
    assert router.cpu_share == pytest.approx(0.7)
    clock.now += 2
    router.feedback(BALANCED)
    assert router.cpu_share == pytest.approx(0.7)


def test_auto_waits_between_decisions_for_the_last_one_to_show():
    clock = ManualClock()
    router = DecodeRouter("auto", AutoPolicy(min_interval_s=2), clock)
    clock.now = 2
    router.feedback(STARVED)
    router.feedback(STARVED)  # same instant: ignored
    clock.now = 3
    router.feedback(STARVED)  # 1 s later: still ignored
    assert router.cpu_share == pytest.approx(0.4)


def test_a_busy_worker_does_not_take_more_even_when_the_device_is_backlogged():
    clock = ManualClock()
    router = DecodeRouter("auto", AutoPolicy(min_interval_s=2), clock)
    clock.now = 10
    router.record_batch(busy_seconds=9.8, decoded=100, decode_seconds=9.0)
    router.feedback(BACKLOGGED)
    assert router.cpu_share == 0.5 and router.cpu_images_per_sec == pytest.approx(100 / 9.0)


def test_auto_split_meets_its_share_over_small_batches_and_keeps_the_largest_images():
    router = DecodeRouter("auto", AutoPolicy(initial_cpu_share=0.25))
    here = [len(router.split([0, 1])[0]) for _ in range(8)]
    assert sum(here) == 4  # 16 rows at 25%: batches of 2 cannot each take half a row
    cpu, device = router.split([10, 11, 12, 13], pixels=[5, 500, 50, 5000])
    assert cpu == [13] and device == [10, 11, 12]


# ids avoid the word "gpu": conftest skips every test whose keywords include it on CPU machines.
@pytest.mark.parametrize("mode", ["cpu", "gpu", "auto"], ids=["forced-cpu", "forced-device", "auto"])
def test_error_rows_are_the_cpu_paths_in_every_mode(mode):
    cells = [data for _, data in mixed_rows()] + [None]
    routed = preprocess_routed(cells, DecodeRouter(mode))
    assert routed.errors == preprocess_batch(cells).errors
    assert sorted(routed.cpu_rows + routed.device_rows) == list(range(len(cells)))
    if mode == "gpu":  # every whole RGB/gray JPEG, nothing else
        assert len(routed.device_rows) == 9
