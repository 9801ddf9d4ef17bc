"""Where a job's wall time went: start-up, steady rate, and how busy the model's device was.

Every engine reports the same three figures in its manifest (``job.night.manifest.Timeline``):
- ``startup_seconds``: from the command's start to the first model batch done: imports,
  planning, engine start, model load, first batch. A command starts when the
  interpreter first imports our code (``COMMAND_STARTED_AT``): not the process's fork, which
  under ``bash -c "pip install ... && python -m ..."`` is when bash started. A ``main()`` called
  from Python (a notebook, a test) starts at the call.
- ``steady_images_per_sec``: rows done between the moments 10% and 90% of the rows were done,
  over that time: the pipeline's rate once it is full, without its ramp-up and tail. Only
  when at least ``STEADY_MIN_EVENTS`` progress events (and ``STEADY_EVENTS_PER_PREDICTOR`` per
  predictor) fall in that window: with fewer, the figure measures when a few batches happened
  to finish, not a rate (two files committed 10 ms apart once read 6,043 images/s for a job
  that ran at 4.6), so it is None.
- ``device_busy_fraction``: time inside the model call (``DEVICE_SECONDS`` on each output row,
  summed) over the engine's time x predictors. Two calls in flight on one GPU both count, so it
  is capped at 1; on CPU it is the share of time the model ran.
- ``wall_seconds``: from the process start to the manifest, for scale.
Engines hand ``summarize`` the progress events they saw: (wall time, rows done), one per model
batch where they can see one, stamped where the model ran (``MODEL_DONE_AT``, set by
``job.stages.Classify``), not where the rows arrived later (Ray's driver receives blocks in
bursts); SageMaker's finest event is a shard's ``.out`` object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


DEVICE_SECONDS = "device_seconds"  # float64 column on output rows: the model call's time / its rows
MODEL_DONE_AT = "model_done_at"  # float64 column on output rows: when their model call returned (time.time())
# Several models (job.several): on one model's rows of a batch, the decodes the batch took and their seconds (on its
# first row; zeros on the others), so the run counts each image's decode once, whatever the models.
DECODES, DECODE_SECONDS = "decodes", "decode_seconds"
STEADY_FROM, STEADY_TO = 0.10, 0.90
# Events inside the 10%-90% window a steady rate needs. P predictors finish batches out of phase,
# so the window's ends are each uncertain by about one batch per predictor: 4 batches each keep
# that error near 25% at worst; 8 at least, whatever the predictors.
STEADY_MIN_EVENTS, STEADY_EVENTS_PER_PREDICTOR = 8, 4



@dataclass(frozen=True)
class Timeline:
    """Where the wall time went; None where the engine could not see it."""

    startup_seconds: float | None  # command start -> the first model batch done (SageMaker: the first shard's .out)
    steady_images_per_sec: float | None  # rows done between the 10th and 90th percentile of rows, over that time
    device_busy_fraction: float | None  # time inside the model call / (the engine's time x predictors), at most 1
    wall_seconds: float  # process start -> the manifest: everything the command took
    events: int | None = None  # progress events the figures come from (model batches, shards); None: not recorded
    # Several models in one run (job.several): the run's decodes (each image once for every model whose recipe could
    # share it) and the CPU seconds they took, summed over the workers; this table's model's seconds in its calls.
    images_decoded: int | None = None
    decode_seconds: float | None = None
    model_seconds: float | None = None


def with_model_time(table: pa.Table, seconds: float) -> pa.Table:
    """``table`` (one model call's output rows) with the call's ``seconds`` spread over its rows and its end stamped."""
    spread = np.full(table.num_rows, seconds / max(table.num_rows, 1))
    table = table.append_column(DEVICE_SECONDS, pa.array(spread, pa.float64()))
    return table.append_column(MODEL_DONE_AT, pa.array(np.full(table.num_rows, time.time()), pa.float64()))


def with_decode_time(table: pa.Table, decodes: int, seconds: float) -> pa.Table:
    """``table`` with the decodes of its batch and their seconds on its first row (``DECODES``, ``DECODE_SECONDS``)."""
    first = np.zeros(table.num_rows)
    counts, spent = first.copy(), first.copy()
    if table.num_rows:
        counts[0], spent[0] = decodes, seconds
    table = table.append_column(DECODES, pa.array(counts, pa.float64()))
    return table.append_column(DECODE_SECONDS, pa.array(spent, pa.float64()))


def decode_of(table: pa.Table) -> tuple[int, float]:
    """The decodes and decode seconds ``table``'s rows carry (0, 0.0: none)."""
    if DECODES not in table.column_names:
        return 0, 0.0
    return int(pc.sum(table.column(DECODES)).as_py() or 0), pc.sum(table.column(DECODE_SECONDS)).as_py() or 0.0


def progress_events(table: pa.Table) -> list[tuple[float, int]]:
    """(when, rows) for the rows of ``table``: one event per model call they came from (a Ray block
    holds several), by their ``MODEL_DONE_AT`` stamp; rows that carry none are done now."""
    if not table.num_rows:
        return []
    if MODEL_DONE_AT not in table.column_names:
        return [(time.time(), table.num_rows)]
    counts = pc.value_counts(table.column(MODEL_DONE_AT))
    return sorted(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()))


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
    return Timeline(startup_seconds=startup, steady_images_per_sec=steady_rate(events, predictors),
                    device_busy_fraction=round(min(busy, 1.0), 3) if busy is not None else None,
                    wall_seconds=round(time.time() - started_at, 3), events=len(events))


def steady_rate(events: Sequence[tuple[float, int]], predictors: int = 1) -> float | None:
    """Rows per second between the 10th and 90th percentile of rows done (``events`` sorted by time);
    None when too few events fall between them to tell a rate (see ``STEADY_MIN_EVENTS``)."""
    total = sum(rows for _, rows in events)
    done, start, end, inside = 0, None, None, 0
    for at, rows in events:
        done += rows
        if start is not None:
            inside += 1
        if start is None and done >= STEADY_FROM * total:
            start = (at, done)
        if done >= STEADY_TO * total:
            end = (at, done)
            break
    needed = max(STEADY_MIN_EVENTS, STEADY_EVENTS_PER_PREDICTOR * predictors)
    if start is None or end is None or end[0] <= start[0] or inside < needed:
        return None
    return round((end[1] - start[1]) / (end[0] - start[0]), 2)
