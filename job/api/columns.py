"""The caller's image column: which column it is, what its Arrow type says it holds, and its rows as the stages read them.

Use it wherever a caller's own rows come in (``job.api.Classifier``, ``runners.ray.api``,
``runners.spark.api``): ``with_image_column`` at the call, so that a missing column, a type the
job cannot read, or raw pixels without their shape is one line naming the Python argument before
any work; ``stage_records`` on each batch (``job.api.rows.preprocess_rows``).

What a column's type says, so that the readers' own output needs no extra argument:

- binary: encoded images (JPEG, PNG, ...), or raw pixels with ``raw_shape=`` or height/width/channels
  columns. Ray's ``read_binary_files`` (column ``bytes``) and Spark's ``binaryFile`` (``content``).
- a list of integers: raw uint8 pixels, with ``raw_shape=`` or height/width/channels columns.
- a uint8 tensor (Arrow's tensor extension types; Ray's ``read_images`` makes one): H x W x C (or
  H x W) pixels whose shape is in the type (fixed shape) or in each row (variable shape).
- Spark's image struct (``format("image")``: origin, height, width, nChannels, mode, data), whose
  pixels are in BGR(A) order.

A tensor's or a struct's alpha channel is dropped; the stages then read them as raw RGB pixels.

When ``image_column=`` is not given and no column is named ``image``, the one column of such a
type is the image column.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from job.config import JobConfig
from job.errors import JobError
from job.input.dataset_check import SHAPE_COLUMNS

BINARY, LIST, TENSOR, VARIABLE_TENSOR, IMAGE_STRUCT = "binary", "list", "tensor", "variable tensor", "image struct"
IMAGE_STRUCT_FIELDS = ("height", "width", "nChannels", "data")  # Spark's ImageSchema, the fields read here
TENSOR_FIELDS = ("data", "shape")  # a variable-shape tensor's storage: each row's values and its shape
Row = tuple[bytes | None, tuple[int, int, int] | None]  # a row's raw pixel bytes and (H, W, C); None, None: a null image
READABLE = ("image bytes (binary), raw pixels (a list of uint8, with raw_shape=), a uint8 image tensor, "
            "or Spark's image struct")


def kind_of(type_: pa.DataType) -> str | None:
    """What a column of ``type_`` holds for the job (``BINARY``, ``LIST``, ``TENSOR``...), None: nothing it reads."""
    if isinstance(type_, pa.BaseExtensionType):
        storage = type_.storage_type
        if pa.types.is_struct(storage) and _has_fields(storage, TENSOR_FIELDS):
            return VARIABLE_TENSOR
        if _is_list(storage) and hasattr(type_, "shape"):
            return TENSOR
        type_ = storage
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_):
        return BINARY
    if _is_list(type_) and pa.types.is_integer(type_.value_type):
        return LIST
    if pa.types.is_struct(type_) and _has_fields(type_, IMAGE_STRUCT_FIELDS):
        return IMAGE_STRUCT
    return None


def with_image_column(config: JobConfig, schema: pa.Schema, named: bool) -> JobConfig:
    """``config`` for rows of ``schema``: the image column found (``named``: the caller passed ``image_column=``)
    and checked; ``JobError`` names the argument to fix.

    A tensor's shape is read from each batch, not from ``schema``: Ray Data gives a schema from the first block,
    and another block of images of another size has another fixed shape, or a variable one."""
    name = _image_column(config.image_column, schema, named)
    type_ = schema.field(name).type
    kind = kind_of(type_)
    if kind is None:
        raise JobError(f"image_column={name!r} has type {type_}; the job reads {READABLE}: pass image_column= naming such a column")
    if kind == LIST and config.raw_shape is None and not all(c in schema.names for c in SHAPE_COLUMNS):
        raise JobError(f"image_column={name!r} holds lists of {type_.value_type} (raw pixels) and the rows give no shape: "
                       f"pass raw_shape=(H, W, C), or add {', '.join(SHAPE_COLUMNS)} columns")
    if kind in (TENSOR, VARIABLE_TENSOR):
        _check_tensor_values(name, type_)
    return config if name == config.image_column else dataclasses.replace(config, image_column=name)


def stage_records(records: pa.RecordBatch | pa.Table, image_column: str) -> pa.RecordBatch | pa.Table:
    """``records`` as ``job.stages.Preprocess`` reads them: a tensor or Spark's image struct becomes RGB pixel bytes
    with height/width/channels columns; any other column is as it was."""
    column = records.column(image_column)
    kind = kind_of(column.type)
    if kind not in (TENSOR, VARIABLE_TENSOR, IMAGE_STRUCT):
        return records
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    rows = {TENSOR: _fixed_tensor_rows, VARIABLE_TENSOR: _tensor_rows, IMAGE_STRUCT: _image_struct_rows}[kind]
    cells, shapes = rows(array)
    table = records if isinstance(records, pa.Table) else pa.Table.from_batches([records])
    table = table.set_column(table.schema.get_field_index(image_column), image_column, pa.array(cells, pa.binary()))
    for index, name in enumerate(SHAPE_COLUMNS):
        values = pa.array([None if shape is None else shape[index] for shape in shapes], pa.int32())
        table = table.set_column(table.schema.get_field_index(name), name, values) if name in table.column_names \
            else table.append_column(name, values)
    return table


def _image_column(given: str, schema: pa.Schema, named: bool) -> str:
    if given in schema.names:
        return given
    found = [field.name for field in schema if kind_of(field.type) not in (None, LIST)]
    if named or len(found) != 1:
        what = f"the rows have no such column (they have {', '.join(schema.names)})"
        if not named and len(found) > 1:
            what = f"the rows have no such column, and several that hold images ({', '.join(found)})"
        raise JobError(f"image_column={given!r}: {what}; pass image_column= naming the column of images")
    return found[0]


def _check_tensor_values(name: str, type_: pa.BaseExtensionType) -> None:
    storage = type_.storage_type
    values = storage.field("data").type.value_type if pa.types.is_struct(storage) else storage.value_type
    if values != pa.uint8():
        raise JobError(f"image_column={name!r} holds tensors of {values}; the job reads uint8 pixels (0-255): cast the column to uint8")


def _fixed_tensor_rows(array: pa.ExtensionArray) -> tuple[list, list]:
    """A fixed-shape tensor's rows (each row's values in the storage's list) as RGB bytes and (H, W, C)."""
    storage, shape = array.storage, tuple(int(d) for d in array.type.shape)
    if pa.types.is_fixed_size_list(storage.type):
        storage = storage.cast(pa.list_(storage.type.value_type))
    valid = storage.is_valid().to_pylist()
    rows = [_row(storage[i].values.to_numpy(zero_copy_only=False), shape, bgr=False) if valid[i] else (None, None)
            for i in range(len(storage))]
    return [cell for cell, _ in rows], [shape for _, shape in rows]


def _tensor_rows(array: pa.ExtensionArray) -> tuple[list, list]:
    """A variable-shape tensor's rows as RGB bytes and (H, W, C)."""
    data, shapes, valid = array.storage.field("data"), array.storage.field("shape").to_pylist(), array.is_valid().to_pylist()
    rows = [_row(data[i].values.to_numpy(zero_copy_only=False), shape, bgr=False) if valid[i] and shape else (None, None)
            for i, shape in enumerate(shapes)]
    return [cell for cell, _ in rows], [shape for _, shape in rows]


def _image_struct_rows(array: pa.StructArray) -> tuple[list, list]:
    """Spark's image struct rows (BGR or BGRA ``data``) as RGB bytes and (H, W, C)."""
    rows = [_row(np.frombuffer(row["data"], np.uint8), (row["height"], row["width"], row["nChannels"]), bgr=True)
            if row is not None and row["data"] else (None, None) for row in array.to_pylist()]  # Spark's unreadable: no data
    return [cell for cell, _ in rows], [shape for _, shape in rows]


def _row(values: np.ndarray, shape: list[int] | tuple[int, ...], *, bgr: bool) -> Row:
    """One image's values as the stage's raw bytes and shape: an H x W image is one channel, alpha dropped,
    BGR turned to RGB. Values that do not fill the shape are left as they are: the stage names the mismatch in the row."""
    hwc = (*shape, 1) if len(shape) == 2 else tuple(shape)
    if len(hwc) != 3 or values.size != hwc[0] * hwc[1] * hwc[2] or hwc[2] < 3:
        return values.tobytes(), hwc if len(hwc) == 3 else (None, None, None)
    pixels = values.reshape(hwc)
    pixels = pixels[:, :, 2::-1] if bgr else pixels[:, :, :3]
    return np.ascontiguousarray(pixels).tobytes(), (hwc[0], hwc[1], 3)


def _is_list(type_: pa.DataType) -> bool:
    return pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)


def _has_fields(struct: pa.StructType, names: tuple[str, ...]) -> bool:
    return all(struct.get_field_index(name) >= 0 for name in names)
