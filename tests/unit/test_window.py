"""--rollout-time's arithmetic (job.night.window) and the night it sizes (job.night.planning.plan_night with a window):
new and changed files first, then the oldest files of another model while they fit, at the table's measured rate."""

from __future__ import annotations

from job.night.options import options_key
from job.night.record import TableFile
from job.night.window import FIRST_STEP_FILES, Window, fit
from job.night.planning import plan_night
from tests.unit.test_night import OPTIONS, OTHER, PART, V1, config, plan, table


def test_the_files_that_fit_after_start_up_and_the_new_files():
    window = Window(100, images_per_sec=10, startup_seconds=20, source="this table's last night")
    # 100 s: 20 of start-up, 30 images new (3 s), then 77 s = 770 images: 300 + 300 fit, the next 300 does not.
    fitted = fit(window, 30, [300, 300, 300])
    assert fitted.files == 2 and "2 files (600 images) fit in 1m40s" in fitted.why and "this table's last night" in fitted.why
    assert fit(window, 2000, [300]).files == 0  # the new files fill the window: nothing re-scored tonight


def test_no_rate_measured_yet_takes_a_small_first_step():
    fitted = fit(Window(3600, None), 0, [10, 10, 10])
    assert fitted.files == FIRST_STEP_FILES and "first step" in fitted.why


def test_a_night_with_a_window_rescores_what_fits_the_oldest_first():
    entries = {name: TableFile(PART[name], V1, 3, 0, made_in=i) for i, name in enumerate("abcd")}
    held = table(entries=entries)
    window = Window(10, images_per_sec=1, startup_seconds=1, source="measured")  # 9 s: three files of 3 images
    night = plan_night(config(incremental=True, rollout_time=10), plan(*"abcd"), held, OTHER, "r2", window)
    assert night.rescored == 3 and night.budget == 3 and "3 files (9 images) fit in" in night.window
    assert {night.relpath[part] for part in night.why} == {"a", "b", "c"}  # the oldest three
    assert night.made_by == {PART["d"]: options_key(OPTIONS)}
    capped = plan_night(config(incremental=True, rollout_time=10, rollout_files=1), plan(*"abcd"), held, OTHER, "r2",
                        window)
    assert capped.rescored == 1 and "--rollout-files 1 takes fewer" in capped.window
