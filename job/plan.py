"""The input side of every job: plan which Parquet files to read, then read them in batches.

``plan_input`` runs once on the driver, before any work: it lists the files, checks the
columns, counts rows from the Parquet footers (rows in, for the manifest) and applies
``--limit``. ``read_file`` runs on workers: it streams one planned file in record batches
with a stable ``id`` per row (``read_planned`` adds each batch's position in the file). A
file is the unit of work for every engine, and the unit of output: one part per input file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.config import JobConfig
from job.errors import JobError
from storage import Location, require_bucket, storage_errors

SHAPE_COLUMNS = ("height", "width", "channels")  # per-row raw pixel shape, when present
# Footers are small; reading many at once hides S3 latency when planning thousands of files.
FOOTER_READ_THREADS = 32


@dataclass(frozen=True)
class InputFile:
    path: str  # inside the input filesystem
    rows: int  # rows to take from the start of the file (all of them unless --limit cut it)


@dataclass(frozen=True)
class InputPlan:
    location: Location
    files: tuple[InputFile, ...]
    id_column: str | None  # None: ids are "<file name>:<row index>"
    image_column: str
    shape_columns: bool  # raw pixels with per-row height/width/channels columns

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def columns(self) -> list[str]:
        shape = list(SHAPE_COLUMNS) if self.shape_columns else []
        return [self.image_column, *([self.id_column] if self.id_column else []), *shape]


def plan_input(location: Location, config: JobConfig) -> InputPlan:
    """List and validate the input, before any work is scheduled."""
    paths = _list_parquet(location)
    schema = _read_schema(location, paths[0])
    _check_image_column(location, paths[0], schema, config.image_column)
    id_column = config.id_column if config.id_column in schema.names else None
    shape_columns = config.raw_shape is None and all(c in schema.names for c in SHAPE_COLUMNS)
    files = _apply_limit(list(zip(paths, _row_counts(location, paths))), config.limit)
    if not files:
        raise JobError(f"{location.uri}: the input has no rows; nothing to do")
    return InputPlan(location, tuple(files), id_column, config.image_column, shape_columns)


def read_file(plan: InputPlan, file: InputFile, batch_rows: int) -> Iterator[tuple[list[str], pa.RecordBatch]]:
    """Yield (ids, record batch) for the first ``file.rows`` rows of ``file``, ``batch_rows`` at a time."""
    name = os.path.basename(file.path)
    start = 0
    with storage_errors(plan.location.uri_of(file.path)):
        # pre_buffer (the default in recent pyarrow, not in older ones): one coalesced GET per row
        # group instead of one per column chunk. Fewer requests, and no tiny ranged GETs: pyarrow
        # cannot retry a 503 SlowDown whose error body is larger than the range it asked for
        # ("Failed to flush response stream"), and a small id column chunk is such a range.
        parquet = pq.ParquetFile(plan.location.filesystem.open_input_file(file.path), pre_buffer=True)
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=plan.columns()):
            batch = batch.slice(0, file.rows - start)
            yield _ids(plan, batch, name, start), batch
            start += batch.num_rows
            if start >= file.rows:
                return


def read_planned(plan: InputPlan, index: int, batch_rows: int) -> Iterator[tuple[int, list[str], pa.RecordBatch]]:
    """``read_file`` of the plan's ``index``-th file, with each batch's first row position in the file."""
    start = 0
    for ids, batch in read_file(plan, plan.files[index], batch_rows):
        yield start, ids, batch
        start += batch.num_rows


def _ids(plan: InputPlan, batch: pa.RecordBatch, name: str, start: int) -> list[str]:
    if plan.id_column is None:
        return [f"{name}:{start + i}" for i in range(batch.num_rows)]
    ids = batch.column(plan.id_column).cast(pa.string()).to_pylist()
    # A null id would be lost in the output; name it by position instead and keep the row.
    return [f"{name}:{start + i}" if v is None else v for i, v in enumerate(ids)]


def _list_parquet(location: Location) -> list[str]:
    with storage_errors(location.uri):
        info = location.filesystem.get_file_info(location.path)
        if info.type == pafs.FileType.File:
            return [location.path]
        if info.type == pafs.FileType.NotFound:
            require_bucket(location, "--input")
            raise JobError(f"{location.uri}: no such file or prefix; check --input")
        infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))
    paths = sorted(i.path for i in infos if i.type == pafs.FileType.File and _is_data_file(i.path))
    if not paths:
        raise JobError(f"{location.uri}: no Parquet files under this prefix; check --input")
    return paths


def _is_data_file(path: str) -> bool:
    """Parquet data files, skipping the _SUCCESS/_metadata/.crc companions writers leave."""
    name = os.path.basename(path)
    return not name.startswith(("_", ".")) and not name.endswith((".crc", ".json"))


def _read_schema(location: Location, path: str) -> pa.Schema:
    with storage_errors(location.uri_of(path)):
        try:
            return pq.read_schema(location.filesystem.open_input_file(path))
        except pa.ArrowInvalid as e:
            raise JobError(f"{location.uri_of(path)}: not a Parquet file ({e})") from e


def _check_image_column(location: Location, path: str, schema: pa.Schema, column: str) -> None:
    if column not in schema.names:
        raise JobError(
            f"{location.uri_of(path)}: no column {column!r} (columns: {', '.join(schema.names)}); "
            "pass --image-column"
        )


def _row_counts(location: Location, paths: list[str]) -> list[int]:
    def count(path: str) -> int:
        with storage_errors(location.uri_of(path)):
            try:
                return pq.ParquetFile(location.filesystem.open_input_file(path)).metadata.num_rows
            except pa.ArrowInvalid as e:
                raise JobError(f"{location.uri_of(path)}: not a Parquet file ({e})") from e

    with ThreadPoolExecutor(max_workers=min(FOOTER_READ_THREADS, len(paths))) as pool:
        return list(pool.map(count, paths))


def _apply_limit(files: list[tuple[str, int]], limit: int | None) -> list[InputFile]:
    planned, remaining = [], limit
    for path, rows in files:
        take = rows if remaining is None else min(rows, remaining)
        if take > 0:
            planned.append(InputFile(path, take))
        if remaining is not None:
            remaining -= take
            if remaining <= 0:
                break
    return planned
