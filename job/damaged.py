"""Tell a damaged input file from a failing store, when reading a Parquet file fails part-way.

Footers are checked before any work (``job.dataset_check``), but a data page behind a valid
footer (a garbled page header, a corrupt compressed page) fails only when it is read. pyarrow
raises the same ``OSError`` for that as for a store that stops answering, and the two need
opposite answers: a store's failure is retried or reported as it is (``storage.errors``), a
damaged file fails every time and needs the file rewritten. So, when a read fails,
``damaged_row_group`` asks the two questions apart: can the store still give the bytes of the
row groups the read was in, and do those row groups decode when read again on their own? Bytes
that arrive but do not decode make a damaged file, named with its row group and rows; anything
else is the store's. Use it from a reader's ``except`` clause (``job.plan``, ``job.unique_ids``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from storage import Location, storage_errors

READ_ERRORS = (OSError, pa.ArrowException)  # what pyarrow raises for a page it cannot read
DAMAGED_FIX = "the file is damaged (its footer reads, a page does not): rewrite it from its source, or move it out of --input"


def damaged_row_group(location: Location, path: str, first_row: int, rows: int, columns: Sequence[str]) -> str | None:
    """Why ``path`` is damaged (one clause naming it, the row group, its rows and pyarrow's words),
    or None when the row groups holding rows ``first_row`` .. ``first_row + rows - 1`` decode now.

    Raises ``StorageError`` when the store fails to give their bytes: then the store is at fault.
    """
    uri = location.uri_of(path)
    with storage_errors(uri), location.filesystem.open_input_file(path) as f:
        parquet = pq.ParquetFile(f)
        for group in _row_groups_over(parquet.metadata, first_row, rows):
            _read_bytes(f, parquet.metadata.row_group(group), columns)  # the store's failure is raised here, as its own
            try:
                parquet.read_row_group(group, columns=list(columns))
            except READ_ERRORS as e:
                start = _first_rows(parquet.metadata)[group]
                end = start + parquet.metadata.row_group(group).num_rows - 1
                return f"{uri}: row group {group} (rows {start}-{end}) cannot be read ({_one_line(e)})"
    return None


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


def _read_bytes(f: pa.NativeFile, group: pq.RowGroupMetaData, columns: Sequence[str]) -> None:
    """Read the raw bytes of ``columns``' chunks in one row group: one ranged read, nothing decoded."""
    chunks = [group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema.split(".")[0] in columns]
    offsets = [c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in chunks]
    if chunks:
        start = min(offsets)
        f.read_at(max(o + c.total_compressed_size for o, c in zip(offsets, chunks)) - start, start)
