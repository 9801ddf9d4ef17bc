"""``_SUCCESS.json``: the typed record of a finished job, written last, trusted by every reader.

Use ``Manifest`` to write one (``job.night.finish.finish_job``) and to read one (``read_manifest``:
``--resume``, parity, the compare report). Its fields are the contract every engine fills
the same way; what only one engine knows (Ray's actor counts, Spark's master, SageMaker's
shards) goes under ``settings``, so a reader never has to guess which keys are whose.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from job.night.record import Snapshot, TableFile
from job.output.parts import STAGING
from job.timeline import Timeline
from storage import Location, storage_errors

MANIFEST = "_SUCCESS.json"
# Fields a reader does without, so that it reads every manifest in an output it may continue: one
# written without "execution" or "table" still lists its parts; "settings" and "manifest" may be empty.
OPTIONAL = {"settings", "manifest", "execution", "table", "rollout"}


@dataclass(frozen=True)
class Counts:
    rows_in: int
    rows_out: int  # rows the table holds: rows_in less those withheld
    predicted: int
    errored: int
    withheld: int = 0  # rows left out of the table because another writer deleted them (a privacy DELETE)


@dataclass(frozen=True)
class InputFiles:
    total: int  # planned input files
    resumed: int  # of which --resume kept the part of an earlier run
    run: int  # of which this run ran
    rows_run: int  # the rows of the files this run ran


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
    # The table's snapshot: each input file's part, the input's identity, the ids index, what this run added,
    # replaced and removed. None: no snapshot, so --incremental refuses to continue it.
    table: Snapshot | None = None
    # Where a rollout of a new model stands after the run (job.night.rollout.Rollout.to_dict); None: one model.
    rollout: dict | None = None

    def to_dict(self) -> dict:
        """As JSON holds it (what a job returns): ``dataclasses.asdict``'s result, without its deep copy of the two
        fields that grow with the files (``files``, ``table``): a million-file table is copied once, not twice."""
        return self._record(entries=True)

    def _record(self, entries: bool) -> dict:
        """``to_dict``'s record; ``entries=False``: the table's entries left ``TableFile``s (``Snapshot.to_dict``)."""
        record = {}
        for name in (f.name for f in dataclasses.fields(self)):
            value = getattr(self, name)
            if name == "table":
                record[name] = None if value is None else value.to_dict(entries)
            elif name == "files":
                record[name] = list(value)
            else:
                record[name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else copy.deepcopy(value)
        return record

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
        try:
            values["table"] = Snapshot.from_dict(data["table"]) if data.get("table") is not None else None
        except KeyError as e:
            raise ValueError(f"not a manifest of this version: its table record has no {e}") from e
        except (TypeError, AttributeError) as e:
            raise ValueError(f"not a manifest of this version: its table record is not a snapshot ({e})") from e
        return cls(**values)


# Past this many output files the manifest is written without indentation (``write_manifest``).
INDENTED_UP_TO_FILES = 1000
# A dict or list of more entries than this is encoded this many at a time (``_compact_json``).
ENCODED_TOGETHER = 10_000
# A manifest's encoded bytes are held in memory up to this size, then in a local temporary file until uploaded
# (``write_manifest``): about 4,000 files' worth.
HELD_UP_TO_BYTES = 1 << 20
UPLOAD_CHUNK_BYTES = 8 << 20  # read from that file and written to the store this much at a time


def write_manifest(location: Location, manifest: Manifest, name: str = MANIFEST) -> str:
    """Write ``_SUCCESS.json`` (or a copy under ``name``) as one object: it appears whole or not at all; returns its URI.

    Indented for a person while the output is small; past ``INDENTED_UP_TO_FILES`` files, compact JSON
    (a third fewer bytes to write and read; ``jq .`` indents it for a person): the same JSON to a reader.
    The compact text is encoded ``ENCODED_TOGETHER`` table entries at a time, each entry made a dict only as
    it is encoded, into a local temporary file past ``HELD_UP_TO_BYTES``: a million-file manifest (about 230 MB)
    is never held as a million dicts, one string or its bytes (``python -m benchmarks.finish_bench``: the
    driver's memory in its last step). Every byte is encoded before the upload starts, so a failure while
    encoding publishes nothing.
    """
    if len(manifest.files) <= INDENTED_UP_TO_FILES:
        pieces: Iterable[str] = [json.dumps(manifest.to_dict(), indent=2, default=str)]
    else:
        pieces = _compact_json(manifest._record(entries=False))
    path = location.join(name)
    with tempfile.SpooledTemporaryFile(max_size=HELD_UP_TO_BYTES) as encoded:
        for piece in pieces:
            encoded.write(piece.encode())
        encoded.seek(0)
        with storage_errors(location.uri), location.writer(path) as out:
            while chunk := encoded.read(UPLOAD_CHUNK_BYTES):
                out.write(chunk)
    return location.uri_of(path)


def _compact_json(value: object) -> Iterator[str]:
    """``json.dumps(value, separators=(",", ":"))`` in pieces: a dict or list of more than ``ENCODED_TOGETHER``
    entries is encoded that many at a time, and a small one holding such is encoded key by key around it."""
    if isinstance(value, (dict, list)) and len(value) > ENCODED_TOGETHER:
        is_dict = isinstance(value, dict)
        entries = iter(value.items() if is_dict else value)
        yield "{" if is_dict else "["
        for number, chunk in enumerate(iter(lambda: list(islice(entries, ENCODED_TOGETHER)), [])):
            yield ("," if number else "") + _encoded(dict(chunk) if is_dict else chunk)[1:-1]
        yield "}" if is_dict else "]"
    elif isinstance(value, dict) and any(_holds_many(v) for v in value.values()):
        yield "{"
        for number, (key, item) in enumerate(value.items()):
            yield ("," if number else "") + _encoded(key) + ":"
            yield from _compact_json(item)
        yield "}"
    else:
        yield _encoded(value)


def _holds_many(value: object) -> bool:
    if isinstance(value, dict):
        return len(value) > ENCODED_TOGETHER or any(_holds_many(v) for v in value.values())
    return isinstance(value, list) and len(value) > ENCODED_TOGETHER


def _encoded(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), default=_as_json)


def _as_json(value: object) -> object:
    """What JSON holds for a value it has no type for: a table entry's record, else its text."""
    return value.to_dict() if isinstance(value, TableFile) else str(value)


def copy_manifest(location: Location, name: str, source: str = MANIFEST) -> str:
    """Copy the written manifest ``source`` (``_SUCCESS.json``, or its history copy) to ``name``; returns the copy's URI.

    The store copies it (S3: CopyObject, server-side, one object appearing whole), so the driver uploads a night's
    manifest once.
    """
    path = location.join(name)
    with storage_errors(location.uri):
        if location.is_s3:
            location.filesystem.copy_file(location.join(source), path)
        else:  # copied into the temporaries, then renamed: a reader never opens half a manifest
            location.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
            location.filesystem.create_dir(location.join(STAGING), recursive=True)
            temp = location.join(f"{STAGING}/{uuid.uuid4().hex}.json")
            location.filesystem.copy_file(location.join(source), temp)
            location.filesystem.move(temp, path)
    return location.uri_of(path)


def read_manifest(location: Location) -> Manifest:
    path = location.join(MANIFEST)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        return Manifest.from_dict(json.loads(f.read()))
