"""Refuse an input whose ids repeat, before any image is decoded: the output must hold each id once.

``check_unique_ids`` reads only the id column of every planned file, in parallel and in record
batches, and keeps one 64-bit hash per id (``id_hashes``, below): 8 bytes an id, whatever the ids'
length, about 80 MB for 10 million. Repeated hashes are then confirmed by value with a second
read that keeps only the rows carrying them, so the refusal names a real id, its files and
rows, and a hash collision is never reported. A null id is refused too, naming its file and row:
an id names its row's output, and no stand-in name is safe from colliding with a real id. Skip
the check (``--skip-id-check``) for inputs known to be clean: the footers' null counts still
refuse null ids before any work where the files have them (``first_null_id`` finds the row), the
reader stops the run at a null id where they have not, and the driver's final check names a
repeated id, but only after the whole run.

The hashes, vectorised in numpy: ``id_hashes(array, as_text)`` gives one uint64 per row and the
rows' validity. Equal ids give equal hashes, so two rows with different hashes hold different ids;
rows with equal hashes are compared by value afterwards (``places_of``), so a collision costs a
re-read, never a wrong answer. Integer ids hash to their own value. Text ids are laid out as a
zero-padded matrix, one row an id, and taken 8 bytes at a time: each word is mixed with its position
by splitmix64 and the mixes summed, plus a mix of the length; two different ids collide with a
probability of about 2^-64. The matrix is as wide as the longest id of a record batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.input.damaged import DAMAGED_FIX, READ_ERRORS, damaged_row_group
from job.errors import JobError
from storage import Location, storage_errors
from storage.errors import retry_short_range_reads
from storage.parallel import map_in_order
from job.ids.hashing import FILES_HASHED_TOGETHER, hashed_together, id_hashes, ids_digest, repeated

ID_READ_THREADS = 16  # id reads are mostly S3 latency: more files in flight than cores
IDS_PER_BATCH = 65_536  # rows per record batch: a few MB of ids per thread, whatever the file size
CONFIRM_AT_ONCE = 1024  # repeated hashes confirmed per re-read; real duplicates are found in the first
EXAMPLE_PLACES = 3  # rows quoted for the repeated id in the refusal
# The way out of an id refusal that every one of them names: without an id column, ids are positional.
POSITIONAL_IDS = "one the files lack gives '<path relative to --input>:<row>' ids"


@dataclass(frozen=True)
class FileIds:
    """What one file's id read found: its non-null ids' hashes (written in place) and its nulls."""

    hashed: int  # non-null ids, hashed at the front of the file's slice
    nulls: int
    first_null: int | None  # the row of the first null id, if any


def null_id_problem(id_column: str, how_many: str = "") -> str:
    """What is wrong with a null id and what to do: the tail of every refusal of one (``how_many``: a count in words)."""
    return (f"its id (column {id_column!r}) is null{how_many}; every row needs an id, which names its output row: fill "
            f"the ids in, or pass --id-column naming a column without nulls ({POSITIONAL_IDS})")


@dataclass(frozen=True)
class CheckedIds:
    ids: int  # ids read and found unique
    digests: dict[str, int]  # each file's ``ids_digest``: the final check holds its part to it


def check_unique_ids(location: Location, files: Sequence[tuple[str, int]], id_column: str, as_text: bool) -> CheckedIds:
    """Raise JobError if an id is null or repeats in the first ``rows`` rows of the ``(path, rows)`` files."""
    hashes, found = _all_hashes(location, files, id_column, as_text)
    _refuse_nulls(location, files, found, id_column)
    starts = np.cumsum([0, *(file_ids.hashed for file_ids in found)])
    digests = {path: ids_digest(hashes[starts[i] : starts[i + 1]]) for i, (path, _) in enumerate(files)}
    candidates, extra_rows = repeated(hashes)
    for start in range(0, len(candidates), CONFIRM_AT_ONCE):
        places = places_of(location, files, id_column, as_text, candidates[start : start + CONFIRM_AT_ONCE])
        twice = {value: rows for value, rows in places.items() if len(rows) > 1}
        if twice:
            raise JobError(_refusal(location, twice, len(candidates), extra_rows, id_column))
    return CheckedIds(len(hashes), digests)


def _all_hashes(location: Location, files: Sequence[tuple[str, int]], id_column: str,
                as_text: bool) -> tuple[np.ndarray, list[FileIds]]:
    """The hashes of every non-null id, in one array allocated once (rows are known from the footers), and each file's nulls."""
    starts = np.concatenate(([0], np.cumsum([rows for _, rows in files], dtype=np.int64)))
    hashes = np.empty(int(starts[-1]), dtype=np.uint64)

    def fill(group: range) -> list[FileIds]:  # writes each file's hashes at the front of its slice
        written = {index: int(starts[index]) for index in group}
        nulls, first_null = dict.fromkeys(group, 0), dict.fromkeys(group)
        pending: list[tuple[int, int, pa.Array]] = []  # (file, first row, ids) read and not hashed yet

        def flush() -> None:
            for (index, first_row, _), (values, valid) in zip(pending, hashed_together([a for *_, a in pending], as_text)):
                kept = values[valid]
                hashes[written[index] : written[index] + len(kept)] = kept
                written[index] += len(kept)
                if first_null[index] is None and len(kept) < len(valid):
                    first_null[index] = first_row + int(np.argmin(valid))
                nulls[index] += len(valid) - len(kept)
            pending.clear()

        waiting = 0
        for index in group:
            for first_row, array in _id_chunks(location, *files[index], id_column):
                pending.append((index, first_row, array))
                waiting += len(array)
                if waiting >= IDS_PER_BATCH:
                    flush()
                    waiting = 0
        flush()
        return [FileIds(written[index] - int(starts[index]), nulls[index], first_null[index]) for index in group]

    groups = _groups(files)
    found = [file_ids for in_group in map_in_order(lambda group: retry_short_range_reads(lambda: fill(group)), groups,
                                                   threads=min(ID_READ_THREADS, len(groups)))
             for file_ids in in_group]
    end = 0
    for start, file_ids in zip(starts[:-1], found):  # close the gaps null ids left; a no-op without nulls
        hashes[end : end + file_ids.hashed] = hashes[int(start) : int(start) + file_ids.hashed]
        end += file_ids.hashed
    return hashes[:end], found


def _groups(files: Sequence[tuple[str, int]]) -> list[range]:
    """Runs of consecutive files one thread reads and hashes together: up to ``FILES_HASHED_TOGETHER`` files and
    ``IDS_PER_BATCH`` ids (a larger file alone, streamed); a thread still reads one file at a time."""
    groups, start, ids = [], 0, 0
    for index, (_, rows) in enumerate(files):
        if index > start and (ids + rows > IDS_PER_BATCH or index - start == FILES_HASHED_TOGETHER):
            groups.append(range(start, index))
            start, ids = index, 0
        ids += rows
    return [*groups, range(start, len(files))] if files else []


def _refuse_nulls(location: Location, files: Sequence[tuple[str, int]], found: list[FileIds], id_column: str) -> None:
    with_nulls = [(path, file_ids) for (path, _), file_ids in zip(files, found) if file_ids.nulls]
    if with_nulls:
        path, first = with_nulls[0]
        total = sum(file_ids.nulls for _, file_ids in with_nulls)
        how_many = f" ({total} rows in {len(with_nulls)} files have none)"
        raise JobError(f"{location.uri_of(path)} row {first.first_null}: {null_id_problem(id_column, how_many)}")


def refuse_counted_nulls(location: Location, files: list[tuple[str, int]], nulls: dict[str, int | None],
                          id_column: str) -> None:
    """Refuse the first planned file whose footer counts null ids among the rows to run (found by one read of its ids)."""
    for path, rows in files:
        if nulls[path]:
            row = first_null_id(location, path, rows, id_column)
            if row is not None:  # None: the nulls lie past --limit
                raise JobError(f"{location.uri_of(path)} row {row}: {null_id_problem(id_column)}")


def first_null_id(location: Location, path: str, rows: int, id_column: str) -> int | None:
    """The row of the first null id among the first ``rows`` rows of one file; None: there is none."""
    for first_row, array in _id_chunks(location, path, rows, id_column):
        if array.null_count:
            return first_row + first_null(array)
    return None


def first_null(array: pa.Array) -> int:
    """The index of the first null in ``array`` (which has one)."""
    return int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])


def hashes_of(location: Location, files: Sequence[tuple[str, int]], id_column: str, as_text: bool) -> np.ndarray:
    """The files' non-null ids, hashed: an incremental run holds its new files' ids against the table's index."""
    return _all_hashes(location, files, id_column, as_text)[0]


def places_of(location: Location, files, id_column: str, as_text: bool, wanted: np.ndarray) -> dict[str, list]:
    """{id: [(path, row), ...]} for the ids whose hash is in ``wanted`` (sorted), in file order."""

    def scan(path_rows: tuple[str, int]) -> list[tuple[str, str, int]]:
        path, rows = path_rows
        found = []
        for first_row, array in _id_chunks(location, path, rows, id_column):
            values, valid = id_hashes(array, as_text)
            hit = np.flatnonzero(valid & np.isin(values, wanted, assume_unique=False))
            texts = array.take(pa.array(hit)).cast(pa.string()).to_pylist()
            found += [(text, path, first_row + int(row)) for text, row in zip(texts, hit)]
        return found

    places: dict[str, list] = {}
    for found in map_in_order(lambda path_rows: retry_short_range_reads(lambda: scan(path_rows)), files,
                              threads=min(ID_READ_THREADS, len(files))):
        for text, path, row in found:
            places.setdefault(text, []).append((path, row))
    return places


def _id_chunks(location: Location, path: str, rows: int, id_column: str) -> Iterator[tuple[int, pa.Array]]:
    """(first row, id array) for the first ``rows`` rows of one file, streamed in record batches."""
    uri = location.uri_of(path)
    start = 0
    with storage_errors(uri):
        try:
            # pre_buffer: one coalesced GET per row group. A small id column is still a short range,
            # which pyarrow cannot retry on a 503: the callers retry the whole file's read instead.
            parquet = pq.ParquetFile(location.filesystem.open_input_file(path), pre_buffer=True)
            for batch in parquet.iter_batches(batch_size=IDS_PER_BATCH, columns=[id_column]):
                if start >= rows:
                    return
                array = batch.column(0).slice(0, rows - start)
                yield start, array
                start += len(array)
        except READ_ERRORS as e:
            damaged = damaged_row_group(location, path, start, IDS_PER_BATCH, [id_column])
            if damaged is not None:
                raise JobError(f"{damaged}: {DAMAGED_FIX}") from e
            if isinstance(e, OSError):
                raise  # it reads now: the store failed for a moment (storage_errors explains it, the callers retry)
            raise JobError(f"{uri}: cannot read its id column {id_column!r} ({e}); fix or remove the file") from e


def _refusal(location: Location, twice: dict[str, list], values: int, extra_rows: int, id_column: str) -> str:
    value, places = next(iter(twice.items()))
    where = [f"{location.uri_of(path)} row {row}" for path, row in places]
    return (f"ids in column {id_column!r} are not unique: {repeat_line(value, where, values, extra_rows)}; the output "
            f"holds each id once: fix the data, or pass --id-column naming a unique column ({POSITIONAL_IDS})")


def repeat_line(value: str, where: list[str], values: int, extra_rows: int) -> str:
    """``'img-3' is at <place>, <place> and 2 more rows (1 ids repeat, 3 rows too many)``: every refusal of a repeated id says it so."""
    more = f" and {len(where) - EXAMPLE_PLACES} more rows" if len(where) > EXAMPLE_PLACES else ""
    return f"{value!r} is at {', '.join(where[:EXAMPLE_PLACES])}{more} ({values} ids repeat, {extra_rows} rows too many)"
