"""A table's nights, read back from ``<output>/_history/``: one typed ``Night`` per record, oldest first.

Every finished night copies its manifest there (``job.night.record.HISTORY_DIR``); a stopped run whose parts a later
night adopted has a small record there instead (``"finished": false``: no figures). ``read_nights`` reads them all,
tolerating manifests written before a field existed (a missing figure is None, never 0), and works out what each
night scored and why (``job.costs.reasons``). ``runners.history`` prints and draws them; ``job.costs.rates`` takes a
table's rate from them.
"""

from __future__ import annotations

import itertools
import json
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow.fs as pafs

from job.costs.reasons import FileStates, file_states, scored_by_reason
from job.errors import JobError
from job.night.options import model_label
from job.night.record import HISTORY_DIR
from storage import Location, storage_errors

RUN_ID_TIME = "%Y%m%dT%H%M%S"  # how a run id begins (job.prepare): its start, in UTC


@dataclass(frozen=True)
class Night:
    """One run of the table, as its ``_history/`` record says; a figure the record lacks is None."""

    run_id: str
    finished: bool  # False: a stopped run whose parts a later night adopted (its record holds no figures)
    at: datetime | None  # when the run started (UTC), from its run id; None: an id of another shape
    engine: str | None
    model: str | None  # the model its rows name (the rows' ``model`` column: job.night.options.model_label)
    scored: int  # images this run scored (the rows of the files it ran); 0 for a stopped run's record
    by_reason: Mapping[str, int] = field(default_factory=dict)  # ``scored`` by why (job.costs.reasons.REASONS)
    rows: int | None = None  # rows in the table after the night
    errored: int | None = None  # of which error rows
    seconds: float | None = None  # the engine's run (the manifest's ``seconds``)
    wall_seconds: float | None = None  # the whole command, from its start to the manifest
    images_per_sec: float | None = None  # scored / seconds
    steady_images_per_sec: float | None = None  # the timeline's steady rate (None: too few batches to tell)
    startup_seconds: float | None = None  # command to the first model batch
    device_busy_fraction: float | None = None
    gpus: int = 0  # GPUs its predictors ran on (0: the CPU)
    number: int | None = None  # the run's number in the table (1: its first); None: not recorded
    hardware: Mapping = field(default_factory=dict)  # the driver's machine (job.report.hardware)
    rollout: Mapping | None = None  # where a rollout stood after the night (job.night.rollout.Rollout.to_dict)
    adopted_by: str | None = None  # a stopped run's record: the night that adopted its parts
    options: Mapping = field(default_factory=dict)  # what shaped its rows (the manifest's output_options)
    record: str = ""  # the record's URI

    @property
    def rate(self) -> float | None:
        """The night's images/s: steady where the timeline could tell, else the whole run's."""
        return self.steady_images_per_sec or self.images_per_sec


def read_nights(output: Location) -> list[Night]:
    """Every ``_history/*.json`` under ``output``, oldest first ([] when there is none); a record that is not JSON
    is refused in one line naming it."""
    nights: list[Night] = []
    adopted: dict[str, set[str]] = {}  # adopting run -> the parts it adopted (stopped runs' records come first)
    previous: FileStates | None = None
    for record, uri in _in_order(output):
        if record.get("finished", True) is False:
            adopted.setdefault(record.get("adopted_by") or "", set()).update(record.get("parts") or ())
            nights.append(_stopped(record, uri))
            continue
        reasons = scored_by_reason(record, previous, adopted.get(record["run_id"], set()))
        nights.append(_finished(record, reasons, uri))
        previous = file_states(record) or previous
    return nights


def _in_order(output: Location) -> Iterator[tuple[dict, str]]:
    """(record, its URI), oldest first, one at a time: by the start a run id begins with (to the second); runs that
    started in the same second by their number in the table, a stopped run's record before the night adopting it."""
    for _, same_second in itertools.groupby(_record_paths(output), key=lambda path: posixpath.basename(path)[:15]):
        records = [(_read(output, path), output.uri_of(path)) for path in same_second]
        yield from sorted(records, key=lambda r: (r[0].get("finished", True) is not False,
                                                  (r[0].get("table") or {}).get("number", 0)))


def read_record(output: Location, run_id: str) -> dict:
    """The ``_history/`` record of ``run_id`` as written (a finished night's: its whole manifest)."""
    return _read(output, output.join(HISTORY_DIR, f"{run_id}.json"))


def _record_paths(output: Location) -> list[str]:
    """The records' paths, by name: a run id starts with its UTC start, so names sort oldest first."""
    folder = output.join(HISTORY_DIR)
    with storage_errors(output.uri_of(folder)):
        infos = output.filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.File and i.path.endswith(".json"))


def _read(output: Location, path: str) -> dict:
    with storage_errors(output.uri_of(path)), output.filesystem.open_input_stream(path) as f:
        text = f.read()
    try:
        record = json.loads(text)
    except ValueError as e:
        raise JobError(f"{output.uri_of(path)}: not a JSON history record ({e}); move it out of {HISTORY_DIR}/") from e
    if not isinstance(record, dict):
        raise JobError(f"{output.uri_of(path)}: a history record is a JSON object, this is a {type(record).__name__}; "
                       f"move it out of {HISTORY_DIR}/")
    record.setdefault("run_id", posixpath.basename(path).removesuffix(".json"))
    return record


def _stopped(record: dict, uri: str) -> Night:
    options = record.get("output_options") or {}
    return Night(record["run_id"], False, started_at(record["run_id"]), None, model_label(options) if options else None,
                 0, adopted_by=record.get("adopted_by"), options=options, record=uri)


def _finished(record: dict, reasons: dict[str, int], uri: str) -> Night:
    counts, timeline = record.get("counts") or {}, record.get("timeline") or {}
    options = record.get("output_options") or {}
    return Night(
        record["run_id"], True, started_at(record["run_id"]), record.get("engine"),
        model_label(options) if options else None, (record.get("input_files") or {}).get("rows_run", 0), reasons,
        rows=counts.get("rows_out"), errored=counts.get("errored"), seconds=record.get("seconds"),
        wall_seconds=timeline.get("wall_seconds"), images_per_sec=record.get("images_per_sec"),
        steady_images_per_sec=timeline.get("steady_images_per_sec"), startup_seconds=timeline.get("startup_seconds"),
        device_busy_fraction=timeline.get("device_busy_fraction"), gpus=_gpus(record),
        number=(record.get("table") or {}).get("number"),
        hardware=record.get("hardware") or {}, rollout=record.get("rollout"), options=options, record=uri)


def _gpus(record: dict) -> int:
    """GPUs the night's predictors ran on: Ray's scaling record, else the driver's machine's (the local engine's)."""
    if (record.get("execution") or {}).get("device") != "cuda":
        return 0
    scaling = (record.get("settings") or {}).get("scaling") or {}
    return int(scaling.get("gpus") or len((record.get("hardware") or {}).get("gpus") or ()) or 1)


def started_at(run_id: str) -> datetime | None:
    """The UTC start a run id begins with (``20261207T032942-61c37e80``); None for an id of another shape."""
    try:
        return datetime.strptime(run_id[:15], RUN_ID_TIME).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
