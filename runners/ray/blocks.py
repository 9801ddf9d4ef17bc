"""The Arrow blocks that carry ``job.stages`` batches between Ray's two actor pools.

Every block has one schema, whatever the decode mode, so Ray can join blocks into a model
batch freely: ``id``, ``error``, ``pixels`` (binary: a row's crop x crop x 3 uint8 pixels when a
CPU decoded it, else null) and ``image`` (binary: the JPEG when the device decodes it, else
null), plus each row's input file and position (the command's rows; the API's have none). A run
of several models (``job.several``) makes a row's pixels in each recipe its models take: a block
a recipe, its rows' ``group`` saying which (the crop differs by recipe), and the decodes its rows
took on its first row (``decodes``, ``decode_seconds``); ``batches_of`` gives a joined batch back
a batch a recipe. Null cells take no bytes, and the pixels of a
block's (or a joined batch's) decoded rows lie back to back in one buffer, so the predictor
reads them as one (K, crop, crop, 3) array without a copy per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from job.output.parts import FILE, ROW, with_position
from job.stages import Batch, PixelBatch, SplitBatch
from job.timeline import decode_of, with_decode_time
from preprocess.split_decode import RoutedBatch

PIXELS, ENCODED, GROUP = "pixels", "image", "group"


def block_of(batch: Batch) -> pa.Table:
    """The Arrow block for one preprocessed batch (its rows carry their file and position)."""
    rows = len(batch.ids)
    if isinstance(batch, SplitBatch):
        routed = batch.routed
        decoded = [row for row in routed.cpu_rows if routed.errors[row] is None]
        pixels = routed.pixels[[k for k, row in enumerate(routed.cpu_rows) if routed.errors[row] is None]]
        images = _binary_at(rows, routed.device_rows, routed.encoded)
        errors = routed.errors
    else:
        decoded = [row for row, error in enumerate(batch.errors) if error is None]
        pixels, images, errors = batch.pixels, pa.nulls(rows, pa.binary()), batch.errors
    table = pa.table({"id": pa.array(batch.ids, pa.string()), "error": pa.array(errors, pa.string()),
                      PIXELS: _pixels_column(rows, decoded, pixels), ENCODED: images,
                      GROUP: pa.array(np.full(rows, getattr(batch, "group", 0)), pa.int16())})
    if isinstance(batch, PixelBatch):
        table = with_decode_time(table, batch.decodes, batch.decode_seconds)
    else:
        table = with_decode_time(table, 0, 0.0)
    return table if batch.files is None else with_position(table, batch.files, batch.rows)


def batches_of(table: pa.Table, crops: tuple[int, ...]) -> list[Batch]:
    """The typed batches back from a joined block of several recipes' rows: a batch a recipe (``crops``: each one's)."""
    groups = table.column(GROUP).to_numpy()
    if len(crops) == 1 or (groups == groups[0]).all():
        found = [int(groups[0])] if len(groups) else []
        return [_with_decodes(batch_of(table, crops[g]), table, g) for g in found]
    out = []
    for group in np.unique(groups).tolist():
        rows = table.filter(pa.array(groups == group))
        out.append(_with_decodes(batch_of(rows, crops[group]), rows, group))
    return out


def _with_decodes(batch: Batch, table: pa.Table, group: int) -> Batch:
    """``batch`` as recipe ``group``'s, with the decodes its rows carry (counted once, on one recipe's rows)."""
    if isinstance(batch, PixelBatch):
        decodes, seconds = decode_of(table)
        batch.group, batch.decodes, batch.decode_seconds = group, decodes, seconds
    return batch


def batch_of(table: pa.Table, crop: int) -> Batch:
    """The typed batch back from a (possibly joined) block of ``crop`` x ``crop`` pixels: a ``SplitBatch`` when any row is still encoded."""
    ids, errors = table.column("id").to_pylist(), table.column("error").to_pylist()
    # The API's rows have no input file and position (the command's always do).
    files, rows = (table.column(FILE).to_numpy(), table.column(ROW).to_numpy()) if FILE in table.column_names else (None, None)
    pixels_column = table.column(PIXELS).combine_chunks()
    pixels = _pixels_of(pixels_column, crop)
    encoded = table.column(ENCODED)
    if encoded.null_count == len(encoded):
        return PixelBatch(ids, pixels, errors, files, rows)
    decoded = np.flatnonzero(pixels_column.is_valid().to_numpy(zero_copy_only=False)).tolist()
    device_rows = np.flatnonzero(encoded.is_valid().to_numpy(zero_copy_only=False)).tolist()
    cells = encoded.to_pylist()
    routed = RoutedBatch(errors, decoded, pixels, device_rows, [cells[row] for row in device_rows])
    return SplitBatch(ids, routed, files, rows)


def _pixels_column(rows: int, decoded: list[int], pixels: np.ndarray) -> pa.Array:
    """A binary column with ``pixels[k]`` at row ``decoded[k]`` and nulls elsewhere, built from one buffer."""
    sizes = np.zeros(rows, np.int32)
    sizes[decoded] = pixels[0].nbytes if len(pixels) else 0  # one decoded row: crop x crop x 3 uint8
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int32)]).astype(np.int32)
    valid = np.zeros(rows, bool)
    valid[decoded] = True
    mask = pa.array(valid).buffers()[1]
    data = pa.py_buffer(np.ascontiguousarray(pixels, dtype=np.uint8))
    return pa.Array.from_buffers(pa.binary(), rows, [mask, pa.py_buffer(offsets), data], null_count=rows - len(decoded))


def _pixels_of(column: pa.Array, crop: int) -> np.ndarray:
    """(K, crop, crop, 3) uint8 view of the non-null cells of a ``_pixels_column`` (after joins too)."""
    if len(column) == 0 or column.null_count == len(column):
        return np.empty((0, crop, crop, 3), np.uint8)
    _, offsets_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32)[column.offset : column.offset + len(column) + 1]
    data = np.frombuffer(data_buffer, np.uint8)[offsets[0] : offsets[-1]]
    return data.reshape(-1, crop, crop, 3)


def _binary_at(rows: int, at: list[int], cells: list[bytes]) -> pa.Array:
    column: list[bytes | None] = [None] * rows
    for row, cell in zip(at, cells):
        column[row] = cell
    return pa.array(column, pa.binary())
