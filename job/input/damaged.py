"""Tell a damaged input file from a failing store, when reading a Parquet file fails part-way.

Footers are checked before any work (``job.input.dataset_check``), but a data page behind a valid
footer (a garbled page header, a corrupt compressed page) fails only when it is read. pyarrow
raises the same ``OSError`` for that as for a store that stops answering, and the two need
opposite answers: a store's failure is retried or reported as it is (``storage.errors``), a
damaged file fails every time and needs the file rewritten. So, when a read fails,
``damaged_row_group`` fetches the bytes of the row groups the read was in (a store's failure is
raised there, as its own) and decodes them again from memory, where no store can fail: bytes that
arrive but do not decode make a damaged file, named with its row group and rows; anything else is
the store's. Use it from a reader's ``except`` clause (``job.input.plan``, ``job.input.unique_ids``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from storage import Location, storage_errors

READ_ERRORS = (OSError, pa.ArrowException)  # what pyarrow raises for a page it cannot read
DAMAGED_FIX = "the file is damaged (its footer reads, a page does not): rewrite it from its source, or move it out of --input"


def damaged_row_group(location: Location, path: str, first_row: int, rows: int, columns: Sequence[str]) -> str | None:
    """Why ``path`` is damaged (one clause naming it, the row group, its rows and pyarrow's words), or None
    when the row groups holding rows ``first_row`` .. ``first_row + rows - 1`` decode from their refetched
    bytes (the failure was the store's), or need bytes past them (no verdict).

    Raises ``StorageError`` when the store fails to give their bytes: then the store is at fault.
    """
    uri = location.uri_of(path)
    with storage_errors(uri), location.filesystem.open_input_file(path) as f:
        metadata, size = pq.ParquetFile(f).metadata, f.size()
        for group in _row_groups_over(metadata, first_row, rows):
            window = _Window(*_read_chunks(f, metadata.row_group(group), columns), size)
            try:
                pq.ParquetFile(pa.PythonFile(window, mode="r"), metadata=metadata, pre_buffer=False).read_row_group(
                    group, columns=list(columns))
            except READ_ERRORS as e:
                if window.strayed:
                    return None  # it needed bytes this did not fetch: no verdict, so the store's error stands
                start = _first_rows(metadata)[group]
                end = start + metadata.row_group(group).num_rows - 1
                return f"{uri}: row group {group} (rows {start}-{end}) cannot be read ({_one_line(e)})"
    return None


class _Window:
    """A read-only file of ``size`` bytes of which only ``data``, at ``start``, is known: what a decode may read."""

    def __init__(self, start: int, data: bytes, size: int) -> None:
        self.start, self.data, self.size, self.position = start, data, size, 0
        self.strayed = False  # a read fell outside the known bytes
        self.closed = False

    def seek(self, position: int, whence: int = 0) -> int:
        self.position = {0: position, 1: self.position + position, 2: self.size + position}[whence]
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, nbytes: int = -1) -> bytes:
        end = self.size if nbytes < 0 else min(self.position + nbytes, self.size)
        if self.position < self.start or end > self.start + len(self.data):
            self.strayed = True
            raise OSError(f"bytes {self.position}-{end} were not fetched")
        chunk = self.data[self.position - self.start : end - self.start]
        self.position = end
        return chunk

    def close(self) -> None:
        self.closed = True


def _one_line(error: BaseException) -> str:
    """pyarrow's words on one line: the garbled bytes it quotes may hold control characters."""
    text = "".join(c if c.isprintable() else " " for c in str(error))
    return " ".join(text.split()).rstrip(".")


def _first_rows(metadata: pq.FileMetaData) -> list[int]:
    """Each row group's first row in the file."""
    starts, row = [], 0
    for group in range(metadata.num_row_groups):
        starts.append(row)
        row += metadata.row_group(group).num_rows
    return starts


def _row_groups_over(metadata: pq.FileMetaData, first_row: int, rows: int) -> list[int]:
    """The row groups holding any of rows ``first_row`` .. ``first_row + rows - 1`` (a read batch may span two)."""
    starts = _first_rows(metadata)
    return [group for group, start in enumerate(starts)
            if start < first_row + rows and start + metadata.row_group(group).num_rows > first_row]


def _read_chunks(f: pa.NativeFile, group: pq.RowGroupMetaData, columns: Sequence[str]) -> tuple[int, bytes]:
    """(offset, raw bytes) of ``columns``' chunks in one row group: one ranged read, nothing decoded."""
    chunks = [group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema.split(".")[0] in columns]
    offsets = [c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in chunks]
    if not chunks:
        return 0, b""
    start = min(offsets)
    return start, f.read_at(max(o + c.total_compressed_size for o, c in zip(offsets, chunks)) - start, start)
