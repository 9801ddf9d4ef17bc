"""Refuse an input whose ids repeat, before any image is decoded: the output must hold each id once.

``check_unique_ids`` reads only the id column of every planned file, in parallel and in record
batches, and keeps one 64-bit hash per id (``job.id_hash``): 8 bytes an id, whatever the ids'
length, about 80 MB for 10 million. Repeated hashes are then confirmed by value with a second
read that keeps only the rows carrying them, so the refusal names a real id, its files and
rows, and a hash collision is never reported. Skip it (``--skip-id-check``) for inputs known to
be clean; the driver's final check still refuses a duplicate, but only after the whole run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.errors import JobError
from job.id_hash import id_hashes
from storage import Location, storage_errors
from storage.errors import retry_short_range_reads

ID_READ_THREADS = 16  # id reads are mostly S3 latency: more files in flight than cores
IDS_PER_BATCH = 65_536  # rows per record batch: a few MB of ids per thread, whatever the file size
CONFIRM_AT_ONCE = 1024  # repeated hashes confirmed per re-read; real duplicates are found in the first
EXAMPLE_PLACES = 3  # rows quoted for the repeated id in the refusal


@dataclass(frozen=True)
class CheckedIds:
    ids: int  # non-null ids read and found unique
    digests: dict[str, int | None]  # each file's ``ids_digest`` (None: it has null ids); the final check holds parts to them


def check_unique_ids(location: Location, files: Sequence[tuple[str, int]], id_column: str, as_text: bool) -> CheckedIds:
    """Raise JobError if an id repeats in the first ``rows`` rows of the ``(path, rows)`` files."""
    hashes, digests = _all_hashes(location, files, id_column, as_text)
    hashes.sort()
    repeats = hashes[1:] == hashes[:-1]
    candidates = np.unique(hashes[1:][repeats])
    for start in range(0, len(candidates), CONFIRM_AT_ONCE):
        places = places_of(location, files, id_column, as_text, candidates[start : start + CONFIRM_AT_ONCE])
        repeated = {value: rows for value, rows in places.items() if len(rows) > 1}
        if repeated:
            raise JobError(_refusal(location, repeated, len(candidates), int(repeats.sum()), id_column))
    return CheckedIds(len(hashes), digests)


def ids_digest(hashes: np.ndarray) -> int:
    """One number for a set of ids, whatever their order: the sum of their hashes (mod 2^64).

    Two files' ids (or a part's and its input file's) with equal digests hold the same ids, but
    for a chance of about 2^-64.
    """
    return int(np.add.reduce(hashes, dtype=np.uint64)) if len(hashes) else 0


def _all_hashes(location: Location, files: Sequence[tuple[str, int]], id_column: str,
                as_text: bool) -> tuple[np.ndarray, dict[str, int | None]]:
    """The hashes of every non-null id, in one array allocated once (rows are known from the footers),
    and each file's ids digest (None for a file with null ids)."""
    starts = np.concatenate(([0], np.cumsum([rows for _, rows in files], dtype=np.int64)))
    hashes = np.empty(int(starts[-1]), dtype=np.uint64)

    def fill(index: int) -> int:  # writes file ``index``'s hashes at the front of its slice; returns how many
        path, rows = files[index]
        written = int(starts[index])
        for _, array in _id_chunks(location, path, rows, id_column):
            values, valid = id_hashes(array, as_text)
            kept = values[valid]
            hashes[written : written + len(kept)] = kept
            written += len(kept)
        return written - int(starts[index])

    with ThreadPoolExecutor(max_workers=max(1, min(ID_READ_THREADS, len(files)))) as pool:
        counts = list(pool.map(lambda index: retry_short_range_reads(lambda: fill(index)), range(len(files))))
    digests = {path: ids_digest(hashes[int(start) : int(start) + count]) if count == rows else None
               for (path, rows), start, count in zip(files, starts[:-1], counts)}
    end = 0
    for start, count in zip(starts[:-1], counts):  # close the gaps null ids left; a no-op without nulls
        hashes[end : end + count] = hashes[int(start) : int(start) + count]
        end += count
    return hashes[:end], digests


def hashes_of(location: Location, files: Sequence[tuple[str, int]], id_column: str, as_text: bool) -> dict[str, np.ndarray]:
    """Each file's non-null ids, hashed: an incremental run holds its new files' ids against the table's index."""

    def one(path: str, rows: int) -> np.ndarray:
        chunks = []
        for _, array in _id_chunks(location, path, rows, id_column):
            values, valid = id_hashes(array, as_text)
            chunks.append(values[valid])
        return np.concatenate(chunks) if chunks else np.empty(0, np.uint64)

    with ThreadPoolExecutor(max_workers=max(1, min(ID_READ_THREADS, len(files)))) as pool:
        found = pool.map(lambda path_rows: retry_short_range_reads(lambda: one(*path_rows)), files)
        return {path: hashes for (path, _), hashes in zip(files, found)}


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
    with ThreadPoolExecutor(max_workers=max(1, min(ID_READ_THREADS, len(files)))) as pool:
        for found in pool.map(lambda path_rows: retry_short_range_reads(lambda: scan(path_rows)), files):
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
        except pa.ArrowInvalid as e:
            raise JobError(f"{uri}: cannot read its id column {id_column!r} ({e}); fix or remove the file") from e


def _refusal(location: Location, repeated: dict[str, list], values: int, extra_rows: int, id_column: str) -> str:
    value, places = next(iter(repeated.items()))
    where = ", ".join(f"{location.uri_of(path)} row {row}" for path, row in places[:EXAMPLE_PLACES])
    more = f" and {len(places) - EXAMPLE_PLACES} more rows" if len(places) > EXAMPLE_PLACES else ""
    return (f"ids in column {id_column!r} are not unique: {value!r} is at {where}{more} ({values} ids repeat, "
            f"{extra_rows} rows too many); the output holds each id once: fix the data, or pass --id-column naming "
            "a unique column (one the files lack gives '<file name>:<row>' ids)")
