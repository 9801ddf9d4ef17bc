"""``--rollout-time``: how many of an older model's files a night re-scores so that the night fits its window.

A team has a window (four hours a night); the night scores its new and changed files first, as always, then re-scores
the older model's files, oldest first, while they fit: start-up, the new and changed images, then each file's images,
at the rate this table's own nights measured (``job.costs.rates.table_rate``, handed in by the driver). A table whose
nights measured no rate yet takes a small first step, which measures one. Pure arithmetic: the plan asks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FIRST_STEP_FILES = 1  # no rate measured yet: re-score one file, and the night's manifest measures the rate


@dataclass(frozen=True)
class Window:
    """The night's window and the rate it is filled at."""

    seconds: float  # --rollout-time
    images_per_sec: float | None  # measured on this table (None: no night measured one yet)
    startup_seconds: float = 0.0  # a night's start-up, as measured with the rate
    source: str = "no rate measured on this table yet"  # where the rate came from, in words

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"a rollout window must last more than 0 s, got {self.seconds}")


@dataclass(frozen=True)
class Fit:
    """What fits in the window: how many of the candidate files, and the line that says why."""

    files: int
    why: str


def fit(window: Window, scoring: int, candidates: Sequence[int]) -> Fit:
    """Of the candidate files (their images, oldest first), how many fit in ``window`` after ``scoring`` images of new
    and changed files (and the start-up)."""
    if window.images_per_sec is None:
        files = min(FIRST_STEP_FILES, len(candidates))
        return Fit(files, f"{window.source}: a first step of {files} file{'' if files == 1 else 's'}, to measure one")
    left = window.seconds - window.startup_seconds - scoring / window.images_per_sec
    files, images = 0, 0
    for rows in candidates:
        if (images + rows) / window.images_per_sec > left:
            break
        files, images = files + 1, images + rows
    return Fit(files, f"{files} file{'' if files == 1 else 's'} ({images} images) fit in {_duration(window.seconds)} "
                      f"after {window.startup_seconds:.0f} s of start-up and {scoring} new and changed images, at "
                      f"{window.images_per_sec:,.1f} images/s ({window.source})")


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
