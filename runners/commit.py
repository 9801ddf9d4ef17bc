"""Make output visible only when it is whole: stage, verify, move into place, manifest last.

Engines write prediction files into ``<output>/_staging/<run id>/``. ``verify`` checks the
staged rows against the input (rows in == rows out, no id twice); ``commit`` moves the files
to ``<output>/part-<run id>-NNNNN.parquet``; ``write_manifest`` writes ``_SUCCESS.json``.
Readers trust an output prefix only when its manifest exists.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from runners.job import JobError
from storage import Location, require_bucket, storage_errors

MANIFEST = "_SUCCESS.json"
STAGING = "_staging"
PART_PREFIX = "part-"


@dataclass(frozen=True)
class Counts:
    rows_in: int
    rows_out: int
    predicted: int
    errored: int


def prepare_output(location: Location, overwrite: bool) -> None:
    """Refuse a finished output unless ``overwrite``; clear what an earlier run of ours left."""
    with storage_errors(location.uri):
        require_bucket(location, "--output")
        files = _files(location, location.path)
        names = {os.path.relpath(f, location.path) for f in files}
        if MANIFEST in names and not overwrite:
            raise JobError(f"{location.uri} already holds a finished job ({MANIFEST}); pass --overwrite or choose another --output")
        foreign = sorted(n for n in names if not _is_ours(n))
        if foreign:
            raise JobError(f"{location.uri} holds files this job did not write (e.g. {foreign[0]}); choose an empty --output")
        for path in sorted(files, key=lambda f: not f.endswith(MANIFEST)):  # manifest first: stop trusting, then delete
            location.filesystem.delete_file(path)


def staging_path(location: Location, run_id: str) -> str:
    return location.join(STAGING, run_id)


ERROR_EXAMPLES = 3  # error rows quoted in the manifest and the summary


def verify(location: Location, staged: str, rows_in: int) -> tuple[Counts, list[dict]]:
    """Count the staged output and check it against the input before anything is visible.

    Returns the counts and a few error rows as examples.
    """
    with storage_errors(location.uri):
        files = _files(location, staged)
        table = pq.read_table(files, filesystem=location.filesystem, columns=["id", "error"]) if files else None
    rows_out = 0 if table is None else table.num_rows
    errored = 0 if table is None else table.num_rows - table.column("error").null_count
    if rows_out != rows_in:
        raise RuntimeError(f"output has {rows_out} rows for {rows_in} input rows; nothing was committed")
    unique = 0 if table is None else len(pc.unique(table.column("id")))
    if unique != rows_out:
        raise RuntimeError(f"output has {rows_out - unique} duplicate ids; nothing was committed")
    counts = Counts(rows_in=rows_in, rows_out=rows_out, predicted=rows_out - errored, errored=errored)
    examples = [] if table is None else table.filter(pc.is_valid(table.column("error"))).slice(0, ERROR_EXAMPLES).to_pylist()
    return counts, examples


def commit(location: Location, staged: str, run_id: str) -> list[str]:
    """Move staged files into the output prefix; returns their names."""
    names = []
    with storage_errors(location.uri):
        for i, path in enumerate(_files(location, staged)):
            name = f"{PART_PREFIX}{run_id}-{i:05d}.parquet"
            location.filesystem.move(path, location.join(name))
            names.append(name)
        location.filesystem.delete_dir(staged)
    return names


def write_manifest(location: Location, manifest: dict) -> str:
    """Write ``_SUCCESS.json`` (one PUT: atomic on S3); returns its URI."""
    path = location.join(MANIFEST)
    with storage_errors(location.uri), location.filesystem.open_output_stream(path) as out:
        out.write(json.dumps(manifest, indent=2, default=_jsonable).encode())
    return location.uri_of(path)


def _jsonable(value: object) -> object:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)  # type: ignore[arg-type]
    return str(value)


def _files(location: Location, path: str) -> list[str]:
    infos = location.filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.File)


def _is_ours(relative: str) -> bool:
    return relative == MANIFEST or relative.startswith((STAGING + "/", PART_PREFIX))
