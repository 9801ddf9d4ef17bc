"""Make output visible only when it is whole: one part per input file, atomically, manifest last.

An output prefix holds::

    part-<stem>-<8 hex>.parquet   one per planned input file, with every row of that file
    _staging/...                  temporaries: local part writes, SageMaker shards (never read;
                                  cleared by the driver after a run and by --resume)
    _SUCCESS.json                 written last, after every part was verified

``part_name`` is the one home of the naming: the input file's stem (for people) and 8 hex of
a SHA-1 of its path relative to the input prefix (two ``x.parquet`` in different folders
differ). ``Parts.write`` makes a part visible whole or not at all. Locally it writes a
temporary file under ``_staging/`` and renames it (atomic within a filesystem). On S3 it
serializes the part in memory and sends it in one PUT to the final key: an object appears
only once its upload completes, while S3 has no rename and copy + delete would double the
requests without adding atomicity. Writing a part twice (a retried task, a speculative
attempt, a block re-executed after an actor died) replaces it with the same rows: harmless.
Each part's footer records its input file, rows and the job's options, which ``--resume``
checks (``runners.resume``). ``verify`` holds every part against the plan (rows in == rows
out, no id twice) before ``write_manifest``; it keeps the ids in memory (about 30 bytes a
row), the only driver state that grows with the dataset; it reads each part whole, in one GET.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from runners.job import JobConfig
from runners.output import OUTPUT_SCHEMA
from runners.source import FOOTER_READ_THREADS, InputFile, InputPlan
from storage import Location, storage_errors

MANIFEST = "_SUCCESS.json"
STAGING = "_staging"
PART_PREFIX, PART_SUFFIX = "part-", ".parquet"
PART_METADATA = b"batch_inference.part"  # footer key: {"input_file", "rows", "options"}
STEM_CHARS = 64  # keeps part names readable (and under S3's 1024-byte keys) for long input names
ERROR_EXAMPLES = 3  # error rows quoted in the manifest and the summary
# JobConfig fields that decide what a part holds; --resume refuses parts written with others.
OUTPUT_OPTIONS = ("weights", "image_column", "id_column", "raw_shape", "limit", "precision", "topk", "max_pixels")


@dataclass(frozen=True)
class Counts:
    rows_in: int
    rows_out: int
    predicted: int
    errored: int


def part_name(input_root: str, path: str) -> str:
    """``part-<stem>-<8 hex>.parquet`` for an input file (a path inside the input filesystem)."""
    relative = input_relpath(input_root, path)
    stem = posixpath.basename(relative).removesuffix(".parquet")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:STEM_CHARS]
    return f"{PART_PREFIX}{stem}-{hashlib.sha1(relative.encode()).hexdigest()[:8]}{PART_SUFFIX}"


def input_relpath(input_root: str, path: str) -> str:
    """An input file's path relative to the input prefix (its name when the input is one file)."""
    return posixpath.relpath(path, input_root) if path != input_root else posixpath.basename(path)


def output_options(config: JobConfig, plan: InputPlan) -> dict:
    """What decides a part's rows: the input (as resolved) and the options in OUTPUT_OPTIONS."""
    options = {name: getattr(config, name) for name in OUTPUT_OPTIONS}
    options["raw_shape"] = list(config.raw_shape) if config.raw_shape else None  # as JSON reads it back
    return {"input": plan.location.uri_of(plan.location.path), **options}


@dataclass(frozen=True)
class Parts:
    """Where a job's parts go and what their footers record; pickled into every writer."""

    output: Location
    staging: str  # <output>/_staging/<run id>: local temporaries
    input_root: str  # the input prefix inside its filesystem; part names hash paths relative to it
    options: dict  # output_options(): recorded in each footer

    def name(self, file: InputFile) -> str:
        return part_name(self.input_root, file.path)

    def write(self, file: InputFile, table: pa.Table) -> str:
        """Commit ``table`` as the part of ``file``; it must hold every row of the file."""
        if table.num_rows != file.rows:
            raise RuntimeError(f"{file.path}: {table.num_rows} output rows for {file.rows} input rows; its part was not written")
        name, fs = self.name(file), self.output.filesystem
        record = {"input_file": input_relpath(self.input_root, file.path), "rows": file.rows, "options": self.options}
        data = _serialize(table.select(OUTPUT_SCHEMA.names).cast(OUTPUT_SCHEMA), {PART_METADATA: json.dumps(record)})
        final = self.output.join(name)
        with storage_errors(self.output.uri_of(final)):
            if self.output.is_s3:
                _put(fs, final, data)  # one PUT: the object appears whole or not at all
            else:
                temp = f"{self.staging}/{name}.{uuid.uuid4().hex[:8]}.tmp"
                fs.create_dir(self.staging, recursive=True)
                _put(fs, temp, data)
                fs.move(temp, final)  # rename: atomic on a local filesystem
        return name


def read_part_record(location: Location, name: str) -> tuple[int, dict | None]:
    """A committed part's row count and footer record (None when it has none) from its footer."""
    path = location.join(name)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_file(path) as f:
        metadata = pq.ParquetFile(f).metadata
    raw = (metadata.metadata or {}).get(PART_METADATA)
    return metadata.num_rows, json.loads(raw) if raw else None


def list_parts(location: Location) -> list[str]:
    """Names of the committed parts directly under the output prefix."""
    with storage_errors(location.uri):
        infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, allow_not_found=True))
    names = (posixpath.basename(i.path) for i in infos if i.type == pafs.FileType.File)
    return sorted(n for n in names if n.startswith(PART_PREFIX) and n.endswith(PART_SUFFIX))


def verify(location: Location, expected: Mapping[str, InputFile]) -> tuple[Counts, list[dict]]:
    """Check every planned file's part, then all of them together; returns counts and error examples."""
    present = set(list_parts(location))
    missing = [f.path for name, f in expected.items() if name not in present]
    if missing:
        raise RuntimeError(f"{len(missing)} of {len(expected)} input files have no committed part (e.g. {missing[0]}); "
                           "no manifest was written: re-run with --resume")
    stale = sorted(present - set(expected))
    if stale:
        raise RuntimeError(f"{location.uri} holds {len(stale)} parts of no planned input file (e.g. {stale[0]}); "
                           "no manifest was written")
    with ThreadPoolExecutor(max_workers=max(1, min(FOOTER_READ_THREADS, len(expected)))) as pool:
        tables = list(pool.map(lambda item: _read_checked(location, *item), expected.items()))
    ids = pa.chunked_array([t.column("id") for t in tables], pa.string())
    duplicates = len(ids) - len(pc.unique(ids))
    if duplicates:
        raise RuntimeError(f"output has {duplicates} duplicate ids; no manifest was written")
    errored = sum(len(t) - t.column("error").null_count for t in tables)
    rows_in = sum(f.rows for f in expected.values())
    return Counts(rows_in=rows_in, rows_out=len(ids), predicted=len(ids) - errored, errored=errored), _error_examples(tables)


def _error_examples(tables: list[pa.Table]) -> list[dict]:
    examples: list[dict] = []
    for table in tables:
        examples += table.filter(pc.is_valid(table.column("error"))).slice(0, ERROR_EXAMPLES - len(examples)).to_pylist()
        if len(examples) >= ERROR_EXAMPLES:
            break
    return examples


def _read_checked(location: Location, name: str, file: InputFile) -> pa.Table:
    path = location.join(name)
    # A part is about 100 bytes a row: one whole GET, not a footer read plus a ranged read per column.
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        table = pq.read_table(pa.BufferReader(f.read()), columns=["id", "error"])
    if table.num_rows != file.rows:
        raise RuntimeError(f"{name} has {table.num_rows} rows for the {file.rows} rows of {file.path}; no manifest was written")
    return table


def clear_staging(location: Location) -> None:
    """Delete ``<output>/_staging`` (temporaries of failed or finished writes), if there is one."""
    path = location.join(STAGING)
    with storage_errors(location.uri_of(path)):
        if location.filesystem.get_file_info(path).type == pafs.FileType.Directory:
            location.filesystem.delete_dir(path)


def write_manifest(location: Location, manifest: dict) -> str:
    """Write ``_SUCCESS.json`` (one PUT: atomic on S3); returns its URI."""
    path = location.join(MANIFEST)
    with storage_errors(location.uri), location.filesystem.open_output_stream(path) as out:
        out.write(json.dumps(manifest, indent=2, default=_jsonable).encode())
    return location.uri_of(path)


def read_manifest(location: Location) -> dict:
    path = location.join(MANIFEST)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        return json.loads(f.read())


def _serialize(table: pa.Table, metadata: dict[bytes, str]) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata}), sink)
    return sink.getvalue()


def _put(fs: pafs.FileSystem, path: str, data: pa.Buffer) -> None:
    # One write of the finished bytes, then close: an upload never completes half a part.
    with fs.open_output_stream(path) as out:
        out.write(data)


def _jsonable(value: object) -> object:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)  # type: ignore[arg-type]
    return str(value)
