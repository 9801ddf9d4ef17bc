"""Damage a real Parquet file behind a valid footer: one data page garbled, the footer and schema intact.

What bit rot or a botched copy leaves: every footer check passes, and the file fails only when
that page is read. ``garble_page`` overwrites the header of the first data page of one column
chunk in one row group (the bytes Parquet's reader parses before it can decode anything) with
fixed noise, on a local path or S3 alike.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage import Location, resolve

GARBLED_BYTES = 16  # covers a page header's first fields: its type, sizes and CRC


def garble_page(uri: str, endpoint: str | None, row_group: int, column: str = "image") -> tuple[int, int]:
    """Garble ``column``'s first data page in ``row_group`` of the Parquet file at ``uri``; returns that row group's
    (first row, last row)."""
    location = resolve(uri, endpoint)
    data = bytearray(_read(location))
    metadata = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata
    group = metadata.row_group(row_group)
    chunk = next(group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema.split(".")[0] == column)
    noise = np.random.default_rng(0).integers(0, 256, GARBLED_BYTES, dtype=np.uint8).tobytes()
    data[chunk.data_page_offset : chunk.data_page_offset + GARBLED_BYTES] = noise
    with location.filesystem.open_output_stream(location.path) as out:
        out.write(bytes(data))
    assert pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.num_rows == metadata.num_rows  # the footer still reads
    first = sum(metadata.row_group(g).num_rows for g in range(row_group))
    return first, first + group.num_rows - 1


def _read(location: Location) -> bytes:
    with location.filesystem.open_input_stream(location.path) as f:
        return f.read()
