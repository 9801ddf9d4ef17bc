"""Where a job's wall time went: start-up, steady rate, and how busy the model's device was.

Every engine reports the same three figures in its manifest (``job.manifest.Timeline``):
- ``startup_seconds``: from the command's start to the first prediction seen by the driver:
  imports, planning, engine start, model load, first batch. A command starts when the
  interpreter first imports our code (``COMMAND_STARTED_AT``): not the process's fork, which
  under ``bash -c "pip install ... && python -m ..."`` is when bash started. A ``main()`` called
  from Python (a notebook, a test) starts at the call.
- ``steady_images_per_sec``: rows done between the moments 10% and 90% of the rows were done,
  over that time: the pipeline's rate once it is full, without its ramp-up and tail.
- ``device_busy_fraction``: time inside the model call (``DEVICE_SECONDS`` on each output row,
  summed) over the engine's time x predictors. Two calls in flight on one GPU both count, so it
  is capped at 1; on CPU it is the share of time the model ran.
- ``wall_seconds``: from the process start to the manifest, for scale.
Engines hand ``summarize`` the progress events they saw: (wall time, rows done).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from job.manifest import Timeline

DEVICE_SECONDS = "device_seconds"  # float64 column on output rows: the model call's time / its rows
STEADY_FROM, STEADY_TO = 0.10, 0.90


def device_seconds_of(table: pa.Table) -> float:
    """The model's time for the rows of ``table`` (0 when they carry none: the Series UDF's rows)."""
    if DEVICE_SECONDS not in table.column_names:
        return 0.0
    return pc.sum(table.column(DEVICE_SECONDS)).as_py() or 0.0


# The first import of our code in this process: ``runners/__init__.py`` imports this module
# first, so a command's clock starts tens of milliseconds after its interpreter did.
COMMAND_STARTED_AT = time.time()


def summarize(progress: Sequence[tuple[float, int]], device_seconds: float, engine_seconds: float, predictors: int,
              started_at: float) -> Timeline:
    """The timeline of a run that started at ``started_at`` from its progress events (wall time, new rows), in any order."""
    events = sorted(progress)
    startup = round(events[0][0] - started_at, 3) if events else None
    busy = device_seconds / (engine_seconds * predictors) if engine_seconds > 0 and predictors else None
    return Timeline(startup_seconds=startup, steady_images_per_sec=steady_rate(events),
                    device_busy_fraction=round(min(busy, 1.0), 3) if busy is not None else None,
                    wall_seconds=round(time.time() - started_at, 3))


def steady_rate(events: Sequence[tuple[float, int]]) -> float | None:
    """Rows per second between the 10th and 90th percentile of rows done; None when too few events."""
    total = sum(rows for _, rows in events)
    done, start, end = 0, None, None
    for at, rows in events:
        done += rows
        if start is None and done >= STEADY_FROM * total:
            start = (at, done)
        if done >= STEADY_TO * total:
            end = (at, done)
            break
    if start is None or end is None or end[0] <= start[0]:
        return None
    return round((end[1] - start[1]) / (end[0] - start[0]), 2)
