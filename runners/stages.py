"""The two stages of every job, as plain callables the engines wrap.

- ``Preprocess``: Arrow record batch of image cells -> uint8 pixels + per-row errors (CPU).
- ``Classify``: pixels + errors -> the output table (the model's device).
Ray wraps each in an actor pool, Spark calls both in one pandas UDF, SageMaker's handler
calls both per request. State (the model) lives in ``__init__``: built once per worker.

With ``--decode gpu`` the CPU stage only hands on the encoded cells
(``Preprocess.encoded_cells``) and ``Classify.classify_encoded`` decodes and resizes them on
the model's device (``preprocess.gpu_decode``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from inference import Predictor, choose_device, load_model
from inference.model import eval_size
from preprocess import PreprocessedBatch, preprocess_batch
from preprocess.gpu_decode import preprocess_on_device
from runners.job import JobConfig, JobError
from runners.output import prediction_table
from runners.source import SHAPE_COLUMNS

BATCH_SIZE_GPU = 256  # ResNet50 at 224px in bf16: large enough to saturate an A10G..H100, a few GB
BATCH_SIZE_CPU = 32  # CPU inference gains nothing past this and holds memory longer


class Preprocess:
    """Decode, resize and crop the image column of a record batch."""

    def __init__(self, config: JobConfig) -> None:
        self.config = config
        self.size = eval_size()

    def __call__(self, batch: pa.RecordBatch | pa.Table) -> PreprocessedBatch:
        cells = image_cells(batch.column(self.config.image_column), raw=self._raw(batch) is not None)
        return preprocess_batch(cells, self.size, raw_shapes=self._raw(batch), max_pixels=self.config.max_pixels)

    def encoded_cells(self, batch: pa.RecordBatch | pa.Table) -> list[bytes | None]:
        """The encoded image cells, undecoded: ``--decode gpu`` decodes them on the model's device."""
        return image_cells(batch.column(self.config.image_column), raw=False)

    def _raw(self, batch: pa.RecordBatch | pa.Table) -> list[tuple[int, int, int]] | None:
        if self.config.raw_shape is not None:
            return [self.config.raw_shape] * batch.num_rows
        if all(c in batch.schema.names for c in SHAPE_COLUMNS):
            return list(zip(*(batch.column(c).to_pylist() for c in SHAPE_COLUMNS)))
        return None


class Classify:
    """Run the model on the rows that decoded and build the output rows."""

    def __init__(self, config: JobConfig, gpu_ids: list[int] | None = None) -> None:
        self.config = config
        device = choose_device(gpu_ids)
        model = load_model(config.weights, s3_endpoint_url=config.s3_endpoint_url)
        self.size = model.eval_size
        self.predictor = Predictor(
            model, device, config.precision, config.topk,
            compile=config.compile, batch_size=default_batch_size(config, device.type == "cuda"),
        )

    def __call__(self, ids: Sequence[str], pixels: np.ndarray, errors: Sequence[str | None]) -> pa.Table:
        ok = np.array([e is None for e in errors], dtype=bool)
        predictions = self.predictor(pixels[ok] if not ok.all() else pixels)
        return prediction_table(ids, errors, predictions)

    def classify_either(self, ids: Sequence[str], pixels_or_cells: np.ndarray | Sequence[bytes | None],
                        errors: Sequence[str | None] | None) -> pa.Table:
        """Whichever the CPU stage produced: pixels with their errors, or (``errors`` None) encoded cells."""
        if errors is None:  # --decode gpu
            return self.classify_encoded(ids, pixels_or_cells)
        return self(ids, pixels_or_cells, errors)

    def classify_encoded(self, ids: Sequence[str], cells: Sequence[bytes | None]) -> pa.Table:
        """``--decode gpu``: decode and resize on the model's device, then classify."""
        batch = preprocess_on_device(cells, self.predictor.device, self.size, max_pixels=self.config.max_pixels)
        ok = [i for i, e in enumerate(batch.errors) if e is None]
        pixels = batch.pixels if len(ok) == len(cells) else batch.pixels[ok]
        return prediction_table(ids, batch.errors, self.predictor(pixels))


def default_batch_size(config: JobConfig, has_gpu: bool) -> int:
    return config.batch_size or (BATCH_SIZE_GPU if has_gpu else BATCH_SIZE_CPU)


def image_cells(column: pa.ChunkedArray | pa.Array, *, raw: bool) -> list:
    """The image column as Python cells: bytes for encoded images, uint8 arrays for raw lists."""
    type_ = column.type.storage_type if isinstance(column.type, pa.ExtensionType) else column.type
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_):
        return column.to_pylist()
    if raw and (pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)):
        return _list_cells(column)
    raise JobError(f"image column has type {column.type}; expected binary image bytes, or a uint8 list with --raw-shape")


def _list_cells(column: pa.ChunkedArray | pa.Array) -> list[np.ndarray | None]:
    """Zero-copy uint8 views of each list cell (raw pixels), None for null cells."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_fixed_size_list(array.type):
        array = array.cast(pa.list_(array.type.value_type))
    offsets = array.offsets.to_numpy()
    values = array.values.to_numpy(zero_copy_only=False)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    return [values[offsets[i] : offsets[i + 1]] if valid[i] else None for i in range(len(array))]
