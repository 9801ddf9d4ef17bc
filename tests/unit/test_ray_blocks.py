"""The Arrow blocks between Ray's pools: every batch type survives Ray's joins and slices unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from job.stages import PixelBatch, SplitBatch
from preprocess.split_decode import RoutedBatch
from runners.ray.blocks import batch_of, block_of

CROP = 224


def pixels(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (count, CROP, CROP, 3), dtype=np.uint8)


def pixel_batch(file: int) -> PixelBatch:
    """Three rows, the middle one an error row (which carries no pixels)."""
    return PixelBatch(["a", "b", "c"], pixels(2, file), [None, "bad", None], np.full(3, file, np.int32), np.arange(3))


def test_pixel_blocks_joined_and_sliced_give_back_the_rows_without_errors():
    first, second = pixel_batch(0), pixel_batch(1)
    joined = pa.concat_tables([block_of(first), block_of(second)])
    back = batch_of(joined, CROP)
    assert isinstance(back, PixelBatch) and back.errors == first.errors + second.errors
    assert np.array_equal(back.pixels, np.concatenate([first.pixels, second.pixels]))
    assert back.files.tolist() == [0, 0, 0, 1, 1, 1] and back.rows.tolist() == [0, 1, 2, 0, 1, 2]
    tail = batch_of(joined.slice(4, 2), CROP)  # as Ray cuts a model batch out of a block
    assert tail.errors == ["bad", None] and np.array_equal(tail.pixels, second.pixels[1:])


def test_a_batch_with_encoded_rows_comes_back_split_in_row_order():
    routed = RoutedBatch(["x", None, None], [0, 1], np.concatenate([np.zeros((1, CROP, CROP, 3), np.uint8), pixels(1, 2)]),
                         [2], [b"jpeg-bytes"])
    split = SplitBatch(["p", "q", "r"], routed, np.zeros(3, np.int32), np.arange(3))
    back = batch_of(pa.concat_tables([block_of(pixel_batch(5)), block_of(split)]), CROP)
    assert isinstance(back, SplitBatch) and back.routed.errors == [None, "bad", None, "x", None, None]
    assert back.routed.cpu_rows == [0, 2, 4] and back.routed.device_rows == [5] and back.routed.encoded == [b"jpeg-bytes"]
    assert np.array_equal(back.routed.pixels[2], routed.pixels[1])  # the error row's zeros did not travel


def test_an_all_error_block_has_no_pixels():
    batch = PixelBatch(["a"], np.empty((0, CROP, CROP, 3), np.uint8), ["bad"], np.zeros(1, np.int32), np.arange(1))
    back = batch_of(block_of(batch), CROP)
    assert back.errors == ["bad"] and back.pixels.shape == (0, CROP, CROP, 3)


def test_the_apis_rows_have_no_positions_and_come_back_without_them():
    batch = PixelBatch(["a", "b"], pixels(1, 2), ["bad", None])  # the API's rows: no input file, no position
    block = block_of(batch)
    assert block.column_names == ["id", "error", "pixels", "image", "group", "decodes", "decode_seconds"]
    back = batch_of(block, CROP)
    assert back.files is None and back.rows is None and np.array_equal(back.pixels, batch.pixels)
