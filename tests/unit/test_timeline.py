"""The timeline every manifest carries: start-up, the steady rate, device busy."""

from __future__ import annotations

import time

import pyarrow as pa

from job.timeline import (DEVICE_SECONDS, MODEL_DONE_AT, STEADY_MIN_EVENTS, device_seconds_of, progress_events,
                          steady_rate, summarize, with_model_time)


def test_steady_rate_counts_the_rows_between_the_10th_and_90th_percentile():
    # 100 rows: 10 at t=10 (start-up), then 10 a second; 10% is reached at t=10, 90% at t=18.
    events = [(10.0, 10)] + [(10.0 + k, 10) for k in range(1, 10)]
    assert steady_rate(events) == (90 - 10) / (18 - 10)


def test_no_steady_rate_when_everything_arrives_at_once():
    assert steady_rate([(5.0, 50)]) is None and steady_rate([]) is None


def test_summarize_measures_startup_from_the_process_start_and_caps_busy_at_one():
    started = time.time() - 20
    timeline = summarize([(started + 12, 8), (started + 14, 8)], device_seconds=50.0, engine_seconds=10.0, predictors=2,
                         started_at=started)
    assert timeline.startup_seconds == 12.0 and timeline.device_busy_fraction == 1.0
    assert 20 <= timeline.wall_seconds < 30


def test_rows_without_device_time_count_zero():
    assert device_seconds_of(pa.table({"id": ["a"]})) == 0.0
    assert device_seconds_of(pa.table({DEVICE_SECONDS: [0.25, 0.5]})) == 0.75


def test_no_steady_rate_from_a_few_commits_close_together():
    """Two input files committed 10 ms apart once read 6,043 images/s for a job that ran at 4.6."""
    assert steady_rate([(100.0, 25), (100.01, 25)]) is None
    assert steady_rate([(100.0 + k, 10) for k in range(STEADY_MIN_EVENTS)]) is None  # one event short of the window


def test_more_predictors_need_more_events_in_the_window():
    events = [(10.0 + k, 10) for k in range(12)]  # 10 events inside the 10%-90% window
    assert steady_rate(events, predictors=2) == 10.0
    assert steady_rate(events, predictors=3) is None


def test_model_time_is_spread_over_the_rows_and_their_end_stamped():
    before = time.time()
    table = with_model_time(pa.table({"id": ["a", "b"]}), 0.5)
    assert table.column(DEVICE_SECONDS).to_pylist() == [0.25, 0.25]
    ((at, rows),) = progress_events(table)
    assert before <= at <= time.time() and rows == 2
    assert progress_events(pa.table({MODEL_DONE_AT: [7.0, 3.0, 7.0]})) == [(3.0, 1), (7.0, 2)]  # a block of two model calls
    ((at, rows),) = progress_events(pa.table({"id": ["a"]}))  # rows that carry no stamp: done now
    assert before <= at and rows == 1


def test_startup_counts_to_the_first_model_batch_not_to_a_file_commit():
    """A single input file: its one part commits at the end, its first batch long before."""
    started = time.time() - 30
    batches = [(started + 10 + k, 32) for k in range(20)]
    timeline = summarize(batches, device_seconds=10.0, engine_seconds=25.0, predictors=1, started_at=started)
    assert timeline.startup_seconds == 10.0 and timeline.steady_images_per_sec == 32.0
