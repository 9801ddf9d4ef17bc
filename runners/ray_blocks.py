"""The Arrow blocks that carry ``job.stages`` batches between Ray's two actor pools.

A ``PixelBatch`` travels as (id, pixels, error) and an ``EncodedBatch`` as (id, image), each
with the input file index and row positions (``job.parts``); ``batch_of`` turns what Ray
hands the predictor back into the same typed batch. Arrow, not a dict of numpy: Ray would
turn the None errors of good rows into NaN.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from ray.data.extensions import ArrowTensorArray

from job.parts import FILE, ROW, with_position
from job.stages import Batch, EncodedBatch, PixelBatch

ENCODED = "image"  # the column of an encoded batch's cells
PIXELS = "pixels"  # (N, crop, crop, 3) uint8 tensor column of a pixel batch


def block_of(batch: Batch) -> pa.Table:
    """The Arrow block for one preprocessed batch (its rows carry their file and position)."""
    ids = pa.array(batch.ids, pa.string())
    if isinstance(batch, EncodedBatch):
        table = pa.table({"id": ids, ENCODED: pa.array(batch.cells, pa.binary())})
    else:
        table = pa.table({"id": ids, PIXELS: ArrowTensorArray.from_numpy(batch.pixels), "error": pa.array(batch.errors, pa.string())})
    return with_position(table, batch.files, batch.rows)


def batch_of(columns: dict[str, np.ndarray]) -> Batch:
    """The typed batch back from the numpy columns Ray's ``map_batches`` hands the predictor.

    Ray may merge blocks of several files into one model batch: each row keeps its own file.
    """
    ids, files, rows = columns["id"].tolist(), columns[FILE], columns[ROW]
    if ENCODED in columns:
        return EncodedBatch(ids, columns[ENCODED].tolist(), files, rows)
    return PixelBatch(ids, columns[PIXELS], columns["error"].tolist(), files, rows)
