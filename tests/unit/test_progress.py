"""The progress display every engine shows: images done of total, images/s, time left."""

from __future__ import annotations

import io
import sys

from job import progress
from job.progress import CLEAR_LINE, ProgressDisplay, clock_text
from tests.common.clock import ManualClock


def test_before_any_rows_it_says_how_long_it_has_been_starting():
    clock = ManualClock(100.0)
    display = ProgressDisplay("ray", 10_000, io.StringIO(), live=False, clock=clock)
    clock.now += 12
    assert display.text() == "ray: 0/10,000 images (0%), starting (12 s)"


def test_the_rate_leaves_start_up_out_and_gives_the_time_left():
    clock = ManualClock(100.0)
    display = ProgressDisplay("spark", 10_000, io.StringIO(), live=False, clock=clock)
    clock.now += 30  # start-up: not part of the rate
    display.advance(1_000)
    clock.now += 10
    display.advance(2_000)  # 2,000 rows in the 10 s after the first ones
    assert display.text() == "spark: 3,000/10,000 images (30%), 200.0 images/s, 0:35 left"
    display.set_done(10_000)
    assert display.text().endswith("images/s, done")


def test_clock_text_reads_like_a_watch():
    assert [clock_text(s) for s in (5, 65, 3600 + 62)] == ["0:05", "1:05", "1:01:02"]


def test_a_terminal_gets_one_line_redrawn_and_other_output_above_it(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.showing("local", 50, live=True) as display:
        progress.advance(20)
        display.draw()
        print("a warning", file=sys.stderr)  # clears the live line first
        progress.advance(30)
    text = terminal.getvalue()
    assert "\n" not in text.split("a warning")[0]  # the live line was redrawn in place, never a new line
    assert f"{CLEAR_LINE}a warning\n" in text
    assert text.endswith("local: 50/50 images (100%), done\n")  # the final count stays
    assert sys.stderr is terminal


def test_a_log_gets_no_line_from_a_run_shorter_than_its_interval():
    log = io.StringIO()
    with progress.showing("ray", 50, stream=log, live=False):
        progress.advance(50)
    assert log.getvalue() == ""


def test_a_log_gets_one_line_each_interval(monkeypatch):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.05)
    log = io.StringIO()
    with progress.showing("ray", 50, stream=log, live=False):
        progress.advance(10)
        while not log.getvalue():
            pass
        progress.advance(40)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("ray: 10/50 images (20%)") and lines[-1].startswith("ray: 50/50 images (100%)")


def test_without_a_display_advance_does_nothing():
    progress.advance(5)  # an executor, or a test calling an engine's internals
    progress.set_done(5)
