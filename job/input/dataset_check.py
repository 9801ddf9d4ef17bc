"""Check the input as a whole before any image is decoded: footers agree, ids are unique and never null.

Use ``check_dataset`` once on the driver, on the files ``job.input.data_files.list_data_files``
found. It reads every file's footer (in parallel: schema, row count, the id column's null
count), holds every file's columns against the first file with rows (``job.input.columns``), drops
files without rows, applies ``--limit``, and reads the id column of the files to run
(``job.input.unique_ids``: no id null, none twice); with ``--skip-id-check`` only the footers' null
counts are held against the ids (a file whose footer has none is read as it is). Each problem is
refused with one ``JobError`` line naming the file, the value and the fix, so nothing a footer
or the id column can tell reaches a worker as a traceback or the end of a night as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from job.input.columns import Footer, InputColumns, check_columns
from job.errors import JobError
from job.input.unique_ids import CheckedIds, check_unique_ids, first_null_id, null_id_problem
from storage import Location, storage_errors
from storage.parallel import map_in_order

# Footers are small; reading many at once hides S3 latency when planning thousands of files.
FOOTER_READ_THREADS = 32
EMPTY_SCHEMA = pa.schema([])


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
    if not with_rows and not require_rows:
        return DatasetReport((), None, tuple(f.path for f in footers), None)
    if not with_rows:
        raise JobError(f"{location.uri}: the input has no rows; nothing to do")
    columns = check_columns(location, with_rows, image_column=image_column, id_column=id_column, raw_shape=raw_shape)
    files = take_rows([(f.path, f.rows) for f in with_rows], limit)
    ids = None  # positional ids (no id column) are unique by construction: nothing to read
    if columns.id_column is not None and check_ids:
        ids = check_unique_ids(location, files, columns.id_column, columns.ids_as_text)
    elif columns.id_column is not None:  # no id read: what the footers say of null ids is all there is before the run
        _refuse_counted_nulls(location, files, {f.path: f.id_nulls for f in with_rows}, columns.id_column)
    empty = tuple(f.path for f in footers if f.rows == 0)
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


def _refuse_counted_nulls(location: Location, files: list[tuple[str, int]], nulls: dict[str, int | None],
                          id_column: str) -> None:
    """Refuse the first planned file whose footer counts null ids among the rows to run (found by one read of its ids)."""
    for path, rows in files:
        if nulls[path]:
            row = first_null_id(location, path, rows, id_column)
            if row is not None:  # None: the nulls lie past --limit
                raise JobError(f"{location.uri_of(path)} row {row}: {null_id_problem(id_column)}")


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
