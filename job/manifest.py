"""``_SUCCESS.json``: the typed record of a finished job, written last, trusted by every reader.

Use ``Manifest`` to write one (``job.finish.finish_job``) and to read one (``read_manifest``:
``--resume``, parity, the compare report). Its fields are the contract every engine fills
the same way; what only one engine knows (Ray's actor counts, Spark's master, SageMaker's
shards) goes under ``settings``, so a reader never has to guess which keys are whose.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from storage import Location, storage_errors

MANIFEST = "_SUCCESS.json"
# Fields a reader does without, so that it reads every manifest in an output it may continue: one
# written without "execution" or "table" still lists its parts; "settings" and "manifest" may be empty.
OPTIONAL = {"settings", "manifest", "execution", "table"}


@dataclass(frozen=True)
class Counts:
    rows_in: int
    rows_out: int
    predicted: int
    errored: int


@dataclass(frozen=True)
class InputFiles:
    total: int  # planned input files
    resumed: int  # of which --resume kept the part of an earlier run
    run: int  # of which this run ran
    rows_run: int  # the rows of the files this run ran


@dataclass(frozen=True)
class Timeline:
    """Where the wall time went; None where the engine could not see it."""

    startup_seconds: float | None  # command start -> the first model batch done (SageMaker: the first shard's .out)
    steady_images_per_sec: float | None  # rows done between the 10th and 90th percentile of rows, over that time
    device_busy_fraction: float | None  # time inside the model call / (the engine's time x predictors), at most 1
    wall_seconds: float  # process start -> the manifest: everything the command took
    events: int | None = None  # progress events the figures come from (model batches, shards); None: not recorded


@dataclass(frozen=True)
class Manifest:
    engine: str
    run_id: str
    input: str
    output: str
    config: dict  # JobConfig.to_dict(): the options as given
    execution: dict  # job.execution.Execution.to_dict(): how the run computed, as the driver decided it
    output_options: dict  # what --resume compares (job.output.parts.output_options)
    counts: Counts
    input_files: InputFiles
    seconds: float  # the engine's run: start of the engine to the last part committed
    images_per_sec: float | None  # this run's rows / seconds; None when nothing was left to run
    timeline: Timeline
    files: list[str]  # the committed parts, by name: what a reader reads
    error_examples: list[dict]
    versions: dict[str, str]
    hardware: dict
    settings: dict = field(default_factory=dict)  # the engine's own facts (actors, master, shards...)
    manifest: str = ""  # this file's URI
    # The table's snapshot (job.output.table.Snapshot): each input file's part, the input's identity, the
    # ids index, what this run added, replaced and removed. None: no snapshot, so --incremental refuses to continue it.
    table: dict | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Manifest:
        """The manifest as written; raises ValueError naming what is missing (an older or foreign file)."""
        names = {f.name for f in dataclasses.fields(cls)}
        missing = sorted(names - data.keys() - OPTIONAL)
        if missing:
            raise ValueError(f"not a manifest of this version: no {', '.join(missing)}")
        values = {"execution": {}, **{k: v for k, v in data.items() if k in names}}
        values["counts"] = Counts(**data["counts"])
        values["input_files"] = InputFiles(**data["input_files"])
        values["timeline"] = Timeline(**data["timeline"])
        return cls(**values)


# Past this many output files the manifest is written without indentation (``write_manifest``).
INDENTED_UP_TO_FILES = 1000


def write_manifest(location: Location, manifest: Manifest, name: str = MANIFEST) -> str:
    """Write ``_SUCCESS.json`` (or a copy under ``name``) in one PUT: atomic on S3; returns its URI.

    Indented for a person while the output is small; past ``INDENTED_UP_TO_FILES`` files, compact JSON
    (a third fewer bytes to write and read; ``jq .`` indents it for a person): the same JSON to a reader.
    """
    indent = 2 if len(manifest.files) <= INDENTED_UP_TO_FILES else None
    text = json.dumps(manifest.to_dict(), indent=indent, separators=None if indent else (",", ":"), default=str)
    path = location.join(name)
    with storage_errors(location.uri), location.writer(path) as out:
        out.write(text.encode())
    return location.uri_of(path)


def copy_manifest(location: Location, name: str) -> str:
    """Copy the written ``_SUCCESS.json`` to ``name`` (its history copy); returns the copy's URI.

    The store copies it (S3: CopyObject, server-side), so the driver uploads a night's manifest once.
    """
    path = location.join(name)
    with storage_errors(location.uri):
        if not location.is_s3:
            location.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        location.filesystem.copy_file(location.join(MANIFEST), path)
    return location.uri_of(path)


def read_manifest(location: Location) -> Manifest:
    path = location.join(MANIFEST)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        return Manifest.from_dict(json.loads(f.read()))
