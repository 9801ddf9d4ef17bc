"""The output contract: one row per input row, the same schema from every engine.

``output_schema(execution)`` is the one definition of the table's columns, which depend on the
run's plan: the prediction columns unless ``--embeddings only``, the ``embedding`` column when
embeddings are asked for, ``id`` first and ``error`` last always. Everything that declares,
casts or checks the output asks it: the part writer (``job.output.parts``), Spark's series UDF, the
SageMaker handler and its assembly, ``runners.compare`` and the tests' contract.

``prediction_table`` is the only place output rows are built (``error_table`` for rows that
never reached the model), so the engines cannot drift: a row that decoded gets its top-k, their
class names and its embedding; a row that did not gets nulls and its ``error``. ``label_name``
and ``topk_label_names`` are always there, null when the model's class names are not known.

``table_schema(execution)`` is what a part on storage holds: those columns and then the row's
lineage (``LINEAGE_FIELDS``), which the part writer adds (``with_lineage``) to every row of every
engine: the input file it came from (relative to ``--input``), the run, the model and when. A shared
table's other writers move rows between files (compaction); the lineage is what still says where a
row came from, so a night removes a replaced input file's rows by it (``SOURCE``), and so can a user.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from inference.weights import IMAGENET_WEIGHTS, RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED

if TYPE_CHECKING:  # only types here: the CPU stage's processes never load torch
    from inference import Predictions
    from job.execution import Execution

EMBEDDING = "embedding"  # the pooled feature: a fixed-size list, one value per feature
ID_FIELD = pa.field("id", pa.string(), nullable=False)
ERROR_FIELD = pa.field("error", pa.string())  # null: classified; else why not
# An error row of a transient cause (a model call that hung past --batch-timeout): the image itself may be fine, so
# the next --incremental night runs its input file again. Every other error is the image's and stays until it changes.
TIMED_OUT = "model call timed out"


def transient_errors(errors: pa.Array | pa.ChunkedArray) -> int:
    """How many of ``errors`` (an error column) are of a transient cause (``TIMED_OUT``)."""
    return pc.sum(pc.fill_null(pc.starts_with(errors, TIMED_OUT), False).cast(pa.int64())).as_py() or 0
PREDICTION_FIELDS = (
    pa.field("label", pa.int64()),  # top-1 class index; null when error is set
    pa.field("label_name", pa.string()),  # its class name; null when the model's names are not known
    pa.field("score", pa.float32()),  # its softmax probability
    pa.field("topk_labels", pa.list_(pa.int64())),
    pa.field("topk_label_names", pa.list_(pa.string())),
    pa.field("topk_scores", pa.list_(pa.float32())),
)
SOURCE = "source_file"  # the lineage column naming the row's input file: what a night removes rows by
LINEAGE_FIELDS = (
    pa.field(SOURCE, pa.string()),  # the input file, or the image object's key, relative to --input
    pa.field("run_id", pa.string()),  # the run that made the row (its manifest: _history/<run id>.json)
    pa.field("model", pa.string()),  # "<source> sha256:<16 hex of the weights' digest>", or "... random seed 0" (model_lineage)
    pa.field("made_at", pa.timestamp("us", tz="UTC")),  # when its part was written
)


def output_schema(execution: Execution) -> pa.Schema:
    """The columns of this run's output: id, the predictions and/or the embedding, error."""
    fields = [ID_FIELD, *(PREDICTION_FIELDS if execution.predictions else ())]
    if execution.embeddings is not None:
        fields.append(embedding_field(execution.embeddings, execution.model.embedding_dim))
    return pa.schema([*fields, ERROR_FIELD])


def table_schema(execution: Execution, in_table: bool = False) -> pa.Schema:
    """The columns of a part on storage: ``output_schema`` and then the lineage (``stored_schema``)."""
    return stored_schema(output_schema(execution), in_table)


def stored_schema(columns: pa.Schema, in_table: bool) -> pa.Schema:
    """What a part on storage holds: ``columns`` (an ``output_schema``), then the lineage, with Parquet field ids.

    ``in_table`` (a Delta or Iceberg table): the embedding is a plain list, the only list type those logs declare;
    readers that take a table's types from its log (polars) refuse a part holding a fixed-size list against it.
    """
    fields = [_as_plain_list(field) if in_table else field for field in columns]
    return with_field_ids(pa.schema([*fields, *LINEAGE_FIELDS], metadata=columns.metadata))


def with_field_ids(schema: pa.Schema) -> pa.Schema:
    """``schema`` with a ``PARQUET:field_id`` on every field, nested ones too, numbered as Iceberg numbers a new
    table's columns (pyiceberg's ``assign_fresh_schema_ids``): a struct's fields first, 1, 2, ..., then each field's
    nested fields in order. Readers that find an Iceberg table's columns by id (Daft, which ignores name mapping)
    then read the parts the table adds as they are."""
    counter = iter(range(1, 1 << 31))
    ids = [next(counter) for _ in schema]
    return pa.schema([_numbered(field, field_id, counter) for field, field_id in zip(schema, ids)], metadata=schema.metadata)


def _numbered(field: pa.Field, field_id: int, counter) -> pa.Field:
    """``field`` with its id, its nested fields numbered from ``counter`` (the order of ``with_field_ids``)."""
    type_ = field.type
    if pa.types.is_struct(type_):
        ids = [next(counter) for _ in range(type_.num_fields)]
        type_ = pa.struct([_numbered(type_.field(i), ids[i], counter) for i in range(type_.num_fields)])
    elif pa.types.is_map(type_):
        key_id, item_id = next(counter), next(counter)
        type_ = pa.map_(_numbered(type_.key_field, key_id, counter), _numbered(type_.item_field, item_id, counter))
    elif pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        element = _numbered(type_.value_field, next(counter), counter)
        type_ = (pa.list_(element, type_.list_size) if pa.types.is_fixed_size_list(type_)
                 else pa.large_list(element) if pa.types.is_large_list(type_) else pa.list_(element))
    return field.with_type(type_).with_metadata({**(field.metadata or {}), b"PARQUET:field_id": str(field_id).encode()})


def _as_plain_list(field: pa.Field) -> pa.Field:
    """A fixed-size list field as a plain list of the same values (other fields as they are)."""
    if not pa.types.is_fixed_size_list(field.type):
        return field
    return field.with_type(pa.list_(field.type.value_field))


def plain_types(table: pa.Table) -> pa.Table:
    """``table`` with every column in the plain type of what it holds: what a step that reads the table compares.

    Other writers of a shared table hand our columns back in types of their own: delta-rs writes ``string_view`` (a
    DELETE that rewrites a compacted file), pyiceberg ``large_string`` and ``large_list``, a writer may
    dictionary-encode, Arrow's view types of lists. Compute kernels such as ``pc.is_in`` have none for some of them,
    and a file written back from them must hold the table's types, so the one place a table file is read
    (``job.night.formats.by_source``) turns them into ``string``, ``binary`` and ``list`` here.
    """
    columns = [_plain_column(column, plain_type(column.type)) for column in table.columns]
    fields = [field.with_type(column.type) for field, column in zip(table.schema, columns)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def plain_type(type_: pa.DataType) -> pa.DataType:
    """The plain type of ``type_``: views, large and dictionary types as their plain ones, nested types throughout."""
    if pa.types.is_dictionary(type_):
        return plain_type(type_.value_type)
    if pa.types.is_string_view(type_) or pa.types.is_large_string(type_):
        return pa.string()
    if pa.types.is_binary_view(type_) or pa.types.is_large_binary(type_):
        return pa.binary()
    if pa.types.is_list_view(type_) or pa.types.is_large_list_view(type_) or pa.types.is_large_list(type_) or pa.types.is_list(type_):
        return pa.list_(type_.value_field.with_type(plain_type(type_.value_type)))
    if pa.types.is_fixed_size_list(type_):
        return pa.list_(type_.value_field.with_type(plain_type(type_.value_type)), type_.list_size)
    if pa.types.is_struct(type_):
        return pa.struct([type_.field(i).with_type(plain_type(type_.field(i).type)) for i in range(type_.num_fields)])
    return type_


def _plain_column(column: pa.ChunkedArray, wanted: pa.DataType) -> pa.ChunkedArray:
    if column.type == wanted:
        return column
    return pa.chunked_array([_plain_array(chunk, wanted) for chunk in column.chunks], wanted)


def _plain_array(array: pa.Array, wanted: pa.DataType) -> pa.Array:
    """``array`` as ``wanted`` (``plain_type`` of its type). A list view is rebuilt from its values and lengths:
    pyarrow 25's cast of one to a list makes an array whose offsets are short."""
    type_ = array.type
    if pa.types.is_dictionary(type_):
        return _plain_array(array.dictionary_decode(), wanted)
    if pa.types.is_list_view(type_) or pa.types.is_large_list_view(type_) or pa.types.is_large_list(type_):
        values = _plain_array(pc.list_flatten(array), wanted.value_type)
        lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        return pa.ListArray.from_arrays(offsets, values, type=wanted, mask=array.is_null())
    return array.cast(wanted)


def model_lineage(source: str, weights: str | None, weights_sha256: str | None) -> str:
    """The ``model`` lineage value: the model's source (``timm:convnext_tiny``, ``mlflow:models:/pets/3``) and the start of
    its weights' digest; seeded random weights say so (``resnet50 random seed 0``), torchvision's ImageNet weights too."""
    if weights == RANDOM_WEIGHTS:
        return f"{source} random seed {RANDOM_WEIGHTS_SEED}"
    if weights_sha256 is None and weights == IMAGENET_WEIGHTS:
        return f"{source} torchvision imagenet"  # torchvision's DEFAULT weights, checked against their hash as downloaded
    return f"{source} sha256:{(weights_sha256 or 'unknown')[:16]}"


def with_lineage(table: pa.Table, source: str | pa.ChunkedArray, run_id: str, model: str, made_at: datetime) -> pa.Table:
    """``table`` (in ``output_schema``) with the lineage columns, the same value on every row but ``source``: an input
    file's name on every row, or one value a row (a group of image objects: each row's object key)."""
    values = (source, run_id, model, made_at)
    for field, value in zip(LINEAGE_FIELDS, values):
        column = value if isinstance(value, pa.ChunkedArray) else pa.array([value] * table.num_rows, field.type)
        table = table.append_column(field, column)
    return table


def embedding_field(dtype: str, dim: int) -> pa.Field:
    """``embedding``: ``dim`` values of ``dtype`` (float16 or float32) per row; null for error rows."""
    return pa.field(EMBEDDING, pa.list_(pa.from_numpy_dtype(np.dtype(dtype)), dim))


def prediction_table(ids: Sequence[str], errors: Sequence[str | None], predictions: Predictions,
                     execution: Execution) -> pa.Table:
    """Merge the model's answers for the rows without errors back into one row per input row.

    ``predictions`` holds one entry per row whose ``errors[i]`` is None, in order.
    """
    ok = np.array([e is None for e in errors], dtype=bool)
    answered = len(predictions.label if predictions.label is not None else predictions.embeddings)
    if int(ok.sum()) != answered:
        raise ValueError(f"{int(ok.sum())} classifiable rows but {answered} predictions")
    columns = {"id": pa.array(list(ids), pa.string())}
    if execution.predictions:
        columns.update(_prediction_columns(predictions, ok, execution.model.class_names))
    if execution.embeddings is not None:
        columns[EMBEDDING] = embedding_column(predictions.embeddings, ok)
    columns["error"] = pa.array(list(errors), pa.string())
    return pa.Table.from_pydict(columns, schema=output_schema(execution))


def error_table(ids: Sequence[str], errors: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Rows in ``schema`` (an ``output_schema``) with ``error`` set and nothing else: rows the model never saw."""
    n = len(ids)
    middle = [pa.nulls(n, field.type) for field in list(schema)[1:-1]]
    return pa.Table.from_arrays([pa.array(list(ids), pa.string()), *middle, pa.array(list(errors), pa.string())], schema=schema)


def _prediction_columns(predictions: Predictions, ok: np.ndarray, names: Sequence[str] | None) -> dict[str, pa.Array]:
    k = predictions.topk_labels.shape[1]
    labels = _scatter(predictions.label, ok, pa.int64())
    topk = _scatter_lists(predictions.topk_labels, ok, pa.int64(), k)
    return {
        "label": labels,
        "label_name": _names_of(labels, names),
        "score": _scatter(predictions.score, ok, pa.float32()),
        "topk_labels": topk,
        "topk_label_names": _names_of(topk, names),
        "topk_scores": _scatter_lists(predictions.topk_scores, ok, pa.float32(), k),
    }


def _names_of(labels: pa.Array, names: Sequence[str] | None) -> pa.Array:
    """The class name of each label (a list of them for a list of labels); all null without names."""
    is_list = pa.types.is_list(labels.type)
    if names is None:
        return pa.nulls(len(labels), pa.list_(pa.string()) if is_list else pa.string())
    table = pa.array(names, pa.string())
    if not is_list:
        return table.take(labels)  # a null label takes a null name
    return pa.ListArray.from_arrays(labels.offsets, table.take(labels.values), mask=labels.is_null())


def _scatter(values: np.ndarray, ok: np.ndarray, type_: pa.DataType) -> pa.Array:
    full = np.zeros(len(ok), dtype=values.dtype)
    full[ok] = values
    return pa.array(full, type_, mask=~ok)


def _scatter_lists(values: np.ndarray, ok: np.ndarray, type_: pa.DataType, k: int) -> pa.Array:
    """A list<type_> column with the k values of ``values`` (K, k) per classified row and null elsewhere."""
    counts = np.where(ok, k, 0)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1), type_), mask=pa.array(~ok))


def embedding_column(values: np.ndarray, ok: np.ndarray) -> pa.Array:
    """``values`` (K, D) as a fixed-size list column, one row per classified row and null elsewhere.

    A fixed-size list keeps D slots under a null row too (zeros here), so the rows' values lie
    back to back: one buffer, no offsets, what readers turn into an (N, D) array without a copy.
    """
    full = values
    if not ok.all():
        full = np.zeros((len(ok), values.shape[1]), dtype=values.dtype)
        full[ok] = values
    flat = pa.array(full.reshape(-1), pa.from_numpy_dtype(values.dtype))
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1], mask=pa.array(~ok))
