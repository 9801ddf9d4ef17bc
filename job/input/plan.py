"""The input plan of every job (which files to read, their rows and ids), and how a worker reads a planned file.

The driver makes the plan once, before any work (``job.prepare.plan_listed``): from the listing
(``job.input.data_files``: nested partition folders read, writers' markers skipped) and the dataset
check (``job.input.dataset_check``: every file's columns against the first's, ids unique across the
input unless ``--skip-id-check``, rows counted from the Parquet footers, ``--limit`` applied). The
plan is a snapshot of the listing: files added while the job runs are not part of it (the next run
picks them up). ``read_file`` runs on
workers: it streams one planned file in record batches with a stable ``id`` per row
(``read_planned`` adds each batch's position in the file). A file is the unit of work for
every engine, and the unit of output: one part per input file. A prefix of image objects
(``job.input.objects``) is planned as groups of objects, each such a unit, read by ``read_file`` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from job.input.damaged import DAMAGED_FIX, READ_ERRORS, damaged_row_group
from job.input.data_files import FileIdentity, input_relpath
from job.input.dataset_check import FOOTER_READ_THREADS, SHAPE_COLUMNS, positional_ids
from job.errors import DataError
from job.input.objects import read_objects
from job.input.unique_ids import first_null, null_id_problem
from storage import Location, storage_errors

__all__ = ["FOOTER_READ_THREADS", "SHAPE_COLUMNS", "InputFile", "InputPlan", "read_file", "read_planned"]
# What a DataError's line ends with: the run's committed parts are kept.
RESUME_AFTER_FIX = "then run again with --resume, which keeps the parts committed so far"


@dataclass(frozen=True, slots=True)  # a million files: no __dict__ each (about 100 bytes)
class InputFile:
    path: str  # inside the input filesystem
    rows: int  # rows to take from the start of the file (all of them unless --limit cut it)
    identity: FileIdentity | None = None  # the version listed (size, mtime): its part records it; --resume compares
    ids_digest: int | None = None  # its ids' digest from the id check (job.input.unique_ids); the final check compares
    # A group of image objects (job.input.objects): (path, size) of each, read in this order; None: a Parquet file.
    members: tuple[tuple[str, int], ...] | None = None
    # Of a group: objects left out because another writer deleted their rows from the table (key, size, mtime_ns,
    # ctime_ns each; job.night.deleted_objects); the table's snapshot records them, and they stay out while unchanged.
    withheld: tuple[tuple[str, int, int | None, int | None], ...] = ()


@dataclass(frozen=True)
class InputPlan:
    location: Location
    files: tuple[InputFile, ...]
    id_column: str | None  # None: ids are "<path relative to --input>:<row index>" (columns.positional_ids)
    image_column: str
    shape_columns: bool  # raw pixels with per-row height/width/channels columns
    ids_as_text: bool = True  # False: integer ids, hashed (job.input.unique_ids.id_hashes) as numbers

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def unit(self) -> str:
        """What its planned units are, in the driver's words: files, or groups of image objects."""
        return "object groups" if self.files and self.files[0].members is not None else "files"

    def columns(self) -> list[str]:
        shape = list(SHAPE_COLUMNS) if self.shape_columns else []
        return [self.image_column, *([self.id_column] if self.id_column else []), *shape]


def read_file(plan: InputPlan, file: InputFile, batch_rows: int) -> Iterator[tuple[list[str], pa.RecordBatch]]:
    """Yield (ids, record batch) for the first ``file.rows`` rows of ``file``, ``batch_rows`` at a time.

    Raises ``DataError`` for what only reading the rows can find: a damaged page (``job.input.damaged``),
    a null id (``--skip-id-check`` where footers have no null counts; ``job.input.dataset_check`` refuses the rest).
    """
    if file.members is not None:
        yield from read_objects(plan.location, file.members, plan.image_column, batch_rows)
        return
    relative, uri = input_relpath(plan.location.path, file.path), plan.location.uri_of(file.path)
    start = 0
    with storage_errors(uri):
        # pre_buffer (the default in recent pyarrow, not in older ones): one coalesced GET per row
        # group instead of one per column chunk. Fewer requests, and no tiny ranged GETs: pyarrow
        # cannot retry a 503 SlowDown whose error body is larger than the range it asked for
        # ("Failed to flush response stream"), and a small id column chunk is such a range.
        parquet = pq.ParquetFile(_open_as_planned(plan, file, uri), pre_buffer=True)
        batches = parquet.iter_batches(batch_size=batch_rows, columns=plan.columns())
        while start < file.rows:
            try:
                batch = next(batches, None)
            except READ_ERRORS as e:
                damaged = damaged_row_group(plan.location, file.path, start, batch_rows, plan.columns())
                if damaged is None:
                    raise  # it reads now: the store failed for a moment (storage_errors explains it)
                raise DataError(f"{damaged}: {DAMAGED_FIX}; {RESUME_AFTER_FIX}") from e
            if batch is None:
                return
            batch = batch.slice(0, file.rows - start)
            yield _ids(plan, batch, relative, start, uri), batch
            start += batch.num_rows


def _open_as_planned(plan: InputPlan, file: InputFile, uri: str) -> pa.NativeFile:
    """The input file, opened; a ``DataError`` when it is gone or no longer the size it was planned at.

    Files change under a running night (a writer replaces one, a lifecycle rule deletes one): what the
    run read would not be what it planned, so the file stops the run in one line, and --resume plans it again.
    """
    try:
        opened = plan.location.filesystem.open_input_file(file.path)
    except FileNotFoundError as e:
        raise DataError(f"{uri}: the input file was deleted after the job planned it; {RESUME_AFTER_FIX}, and plans "
                        "the input as it is then") from e
    if file.identity is not None and opened.size() != file.identity.size:
        raise DataError(f"{uri}: the input file changed after the job planned it ({file.identity.size} bytes, now "
                        f"{opened.size()}); {RESUME_AFTER_FIX}, and redoes the files that changed")
    return opened


def read_planned(plan: InputPlan, index: int, batch_rows: int) -> Iterator[tuple[int, list[str], pa.RecordBatch]]:
    """``read_file`` of the plan's ``index``-th file, with each batch's first row position in the file."""
    start = 0
    for ids, batch in read_file(plan, plan.files[index], batch_rows):
        yield start, ids, batch
        start += batch.num_rows


def _ids(plan: InputPlan, batch: pa.RecordBatch, relative: str, start: int, uri: str) -> list[str]:
    if plan.id_column is None:
        return positional_ids(relative, start, batch.num_rows)
    column = batch.column(plan.id_column)
    if column.null_count:
        row = start + first_null(column)
        raise DataError(f"{uri} row {row}: {null_id_problem(plan.id_column)}; {RESUME_AFTER_FIX}")
    return column.cast(pa.string()).to_pylist()
