"""The timeline every manifest carries: start-up, the steady rate, device busy."""

from __future__ import annotations

import time

import pyarrow as pa

from job.timeline import DEVICE_SECONDS, device_seconds_of, steady_rate, summarize


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
