"""Check the input as a whole before any image is decoded: footers agree, ids are unique and never null.

Use ``check_dataset`` once on the driver, on the files ``job.input.data_files.list_data_files``
found. It reads every file's footer (in parallel: schema, row count, the id column's null count),
holds every file's columns against the first file with rows (``check_columns``), drops files
without rows (saying so on stderr), applies ``--limit``, and reads the id column of the files to
run (``job.input.unique_ids``: no id null, none twice); with ``--skip-id-check`` only the footers'
null counts are held against the ids (a file whose footer has none is read as it is). Each problem
is refused with one ``JobError`` line naming the file, the value and the fix, so nothing a footer
or the id column can tell reaches a worker as a traceback or the end of a night as a failure.

The columns: the first file with rows decides what the job reads (its id column if it has one,
per-row height/width/channels if it has all three); every other file must agree, or a worker would
meet the difference as a ``KeyError`` mid-run. Types are told apart with ``pa.types`` predicates,
never by their printed names. Columns the job does not read may differ freely.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from job.errors import JobError
from job.input.unique_ids import POSITIONAL_IDS, CheckedIds, check_unique_ids, refuse_counted_nulls
from storage import Location, storage_errors
from storage.parallel import map_in_order

# Footers are small; reading many at once hides S3 latency when planning thousands of files.
FOOTER_READ_THREADS = 32
SHAPE_COLUMNS = ("height", "width", "channels")  # per-row raw pixel shape, when present
EMPTY_SCHEMA = pa.schema([])


def positional_ids(relative: str, start: int, rows: int) -> list[str]:
    """The ids of rows ``start`` to ``start + rows`` of a file without an id column: ``<relative>:<row>``.

    ``relative``: the file's path relative to --input (``job.input.data_files.input_relpath``), so
    ``date=1/part-0.parquet`` and ``date=2/part-0.parquet`` never share an id: unique by construction,
    and for a file directly under --input the id is ``<file name>:<row>``.
    """
    return [f"{relative}:{start + i}" for i in range(rows)]


@dataclass(frozen=True)
class Footer:
    path: str  # inside the input filesystem
    rows: int
    schema: pa.Schema
    id_nulls: int | None = None  # null ids by the footer's statistics; None: not recorded (or no id column)


@dataclass(frozen=True)
class InputColumns:
    id_column: str | None  # None: the first file has no such column; ids are positional (``positional_ids``)
    shape_columns: bool  # raw pixels sized per row by SHAPE_COLUMNS
    ids_as_text: bool  # some file's ids are text (or ids are positional): integer ids are compared as the text the output holds


@dataclass(frozen=True)
class DatasetReport:
    files: tuple[tuple[str, int], ...]  # (path, rows to read) of the files to run, in order; --limit applied
    columns: InputColumns | None  # None: no file had rows (nothing to read columns from); else the id column (or None: "<path>:<row>" ids), shape columns, how ids hash
    empty: tuple[str, ...]  # files with no rows (0 bytes, or a Parquet file of 0 rows): nothing to run
    ids: CheckedIds | None  # what the id check found (each file's ids digest); None when skipped or ids are positional

    @property
    def ids_checked(self) -> int | None:
        """Non-null ids read and found unique; None when none were read."""
        return self.ids.ids if self.ids is not None else None

    @property
    def rows(self) -> int:
        return sum(rows for _, rows in self.files)


def check_dataset(
    location: Location,
    paths: Sequence[str],
    *,
    image_column: str,
    id_column: str,
    raw_shape: tuple[int, int, int] | None,
    limit: int | None = None,
    check_ids: bool = True,
    require_rows: bool = True,
) -> DatasetReport:
    """Refuse what the footers and the id column show to be wrong (JobError, one line); see the module docstring.

    ``require_rows``: refuse files that hold no row at all (a first run has nothing to do); False when
    the files join a table whose columns are known (a night whose only new file is empty is no error).
    """
    footers = read_footers(location, paths, id_column)
    with_rows = [f for f in footers if f.rows > 0]
    empty = tuple(f.path for f in footers if f.rows == 0)
    if not with_rows and require_rows:
        raise JobError(f"{location.uri}: the input has no rows; nothing to do")
    columns, files, ids = None, [], None  # positional ids (no id column) are unique by construction: nothing to read
    if with_rows:
        columns = check_columns(location, with_rows, image_column=image_column, id_column=id_column, raw_shape=raw_shape)
        files = take_rows([(f.path, f.rows) for f in with_rows], limit)
        if columns.id_column is not None and check_ids:
            ids = check_unique_ids(location, files, columns.id_column, columns.ids_as_text)
        elif columns.id_column is not None:  # no id read: what the footers say of null ids is all there is before the run
            refuse_counted_nulls(location, files, {f.path: f.id_nulls for f in with_rows}, columns.id_column)
    if empty:  # nothing to run, but a user may wonder why their parts are empty
        more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
        print(f"input: {len(empty)} files without rows ({location.uri_of(empty[0])}{more}): nothing to run, their parts "
              "are empty", file=sys.stderr)
    return DatasetReport(tuple(files), columns, empty, ids)


def read_footers(location: Location, paths: Sequence[str], id_column: str | None = None) -> list[Footer]:
    """Every file's schema and row count (and null ``id_column`` cells where recorded), in the order given;
    a 0-byte file counts as 0 rows."""

    # One schema object per distinct schema, not per file: a dataset's files nearly always share one, and a
    # million footers each holding its own copy would take gigabytes of the driver's memory.
    schemas: dict[pa.Schema, pa.Schema] = {}

    def footer(path: str) -> Footer:
        with storage_errors(location.uri_of(path)), location.filesystem.open_input_file(path) as f:
            if f.size() == 0:  # an empty object (a writer's placeholder, an aborted upload): no rows, no schema
                return Footer(path, 0, EMPTY_SCHEMA)
            try:
                metadata = pq.ParquetFile(f).metadata
            except pa.ArrowInvalid as e:
                raise JobError(f"{location.uri_of(path)}: not a Parquet file ({e}); move it out of --input, or "
                               "rename it to start with '_' or '.' so readers skip it") from e
        schema = metadata.schema.to_arrow_schema()
        return Footer(path, metadata.num_rows, schemas.setdefault(schema, schema), _null_count(metadata, id_column))

    return list(map_in_order(footer, paths, threads=min(FOOTER_READ_THREADS, len(paths))))


def _null_count(metadata: pq.FileMetaData, column: str | None) -> int | None:
    """Null cells of a top-level ``column`` by the row groups' statistics; None where any row group has none."""
    names = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if column not in names:
        return None
    index, nulls = names.index(column), 0
    for group in range(metadata.num_row_groups):
        statistics = metadata.row_group(group).column(index).statistics
        if statistics is None or not statistics.has_null_count:
            return None
        nulls += statistics.null_count
    return nulls


def take_rows(files: list[tuple[str, int]], limit: int | None) -> list[tuple[str, int]]:
    """The files and rows to run: all of them, or the first ``limit`` rows in file order."""
    taken, remaining = [], limit
    for path, rows in files:
        take = rows if remaining is None else min(rows, remaining)
        if take > 0:
            taken.append((path, take))
        if remaining is not None:
            remaining -= take
            if remaining <= 0:
                break
    return taken


def check_columns(
    location: Location, footers: list[Footer], *, image_column: str, id_column: str, raw_shape: tuple[int, int, int] | None
) -> InputColumns:
    """The columns the job reads, after checking them in every file; raise JobError (one line) otherwise."""
    first = footers[0].schema
    shape_columns = raw_shape is None and all(c in first.names for c in SHAPE_COLUMNS)
    raw = raw_shape is not None or shape_columns
    ids = id_column if id_column in first.names else None
    for footer in footers:
        where, names = location.uri_of(footer.path), footer.schema.names
        _check_image(where, footer.schema, image_column, raw, footers[0], location)
        if (id_column in names) != (ids is not None):
            raise JobError(_id_disagrees(location, footer, footers[0], id_column))
        if ids is not None:
            _check_id_type(where, footer.schema.field(ids))
        if shape_columns:
            _check_shape_columns(where, footer.schema, location.uri_of(footers[0].path))
    # Positional ids ("<path>:<row>") are text too: the final check hashes them as such.
    as_text = ids is None or not all(_is_integer(f.schema.field(ids).type) for f in footers)
    return InputColumns(ids, shape_columns, as_text)


def _check_image(where: str, schema: pa.Schema, column: str, raw: bool, first: Footer, location: Location) -> None:
    if column not in schema.names:
        also = "" if schema is first.schema else f", which {location.uri_of(first.path)} has"
        raise JobError(f"{where}: no column {column!r} (columns: {', '.join(schema.names)}){also}; every file needs the "
                       "image column: pass --image-column, or move this file out of --input")
    type_ = schema.field(column).type
    if not (_is_bytes(type_) or (raw and _is_pixel_list(type_))):
        expected = "image bytes (binary) or raw pixels (a list of uint8)" if raw else "encoded image bytes (binary)"
        hint = "" if raw else "; raw pixels also need --raw-shape H,W,C or height/width/channels columns"
        raise JobError(f"{where}: column {column!r} is {type_}, expected {expected}{hint}; pass --image-column naming "
                       "the image column")


def _id_disagrees(location: Location, footer: Footer, first: Footer, id_column: str) -> str:
    has, lacks = (footer, first) if id_column in footer.schema.names else (first, footer)
    return (f"{location.uri_of(lacks.path)}: no id column {id_column!r}, which {location.uri_of(has.path)} has; ids must "
            f"come from one column in every file: add it to every file, or pass --id-column naming a column every file "
            f"has ({POSITIONAL_IDS})")


def _check_id_type(where: str, field: pa.Field) -> None:
    if not (_is_text(field.type) or _is_integer(field.type)):
        raise JobError(f"{where}: id column {field.name!r} is {field.type}; ids must be strings or integers: pass "
                       f"--id-column naming such a column ({POSITIONAL_IDS})")


def _check_shape_columns(where: str, schema: pa.Schema, first: str) -> None:
    for column in SHAPE_COLUMNS:
        if column not in schema.names or not pa.types.is_integer(schema.field(column).type):
            found = schema.field(column).type if column in schema.names else "missing"
            raise JobError(f"{where}: column {column!r} is {found}, but {first} sizes raw pixels per row by integer "
                           f"{'/'.join(SHAPE_COLUMNS)} columns; every file needs them, or pass --raw-shape H,W,C")


def _is_bytes(type_: pa.DataType) -> bool:
    return pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_)


def _is_pixel_list(type_: pa.DataType) -> bool:
    if isinstance(type_, pa.ExtensionType):  # e.g. a fixed-shape tensor column: its storage is a fixed-size list
        type_ = type_.storage_type
    is_list = pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)
    return is_list and pa.types.is_uint8(type_.value_type)


def _unwrap_dictionary(type_: pa.DataType) -> pa.DataType:
    return type_.value_type if pa.types.is_dictionary(type_) else type_


def _is_text(type_: pa.DataType) -> bool:
    type_ = _unwrap_dictionary(type_)
    return pa.types.is_string(type_) or pa.types.is_large_string(type_) or pa.types.is_string_view(type_)


def _is_integer(type_: pa.DataType) -> bool:
    return pa.types.is_integer(_unwrap_dictionary(type_))
