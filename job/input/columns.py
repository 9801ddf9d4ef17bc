"""Hold every input file's columns against the first file's: present, and of a type the job reads.

``check_columns`` runs on the driver over the footers of the files with rows. The first file
decides what the job reads (as the plan always did: its id column if it has one, per-row
height/width/channels if it has all three); every other file must agree, or a worker would
meet the difference as a ``KeyError`` mid-run. Types are told apart with ``pa.types``
predicates, never by their printed names. Columns the job does not read may differ freely.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from job.errors import JobError
from storage import Location

SHAPE_COLUMNS = ("height", "width", "channels")  # per-row raw pixel shape, when present
POSITIONAL_IDS = "one the files lack gives '<path relative to --input>:<row>' ids"


def positional_ids(relative: str, start: int, rows: int) -> list[str]:
    """The ids of rows ``start`` to ``start + rows`` of a file without an id column: ``<relative>:<row>``.

    ``relative``: the file's path relative to --input (``job.input.data_files.input_relpath``), so
    ``date=1/part-0.parquet`` and ``date=2/part-0.parquet`` never share an id: unique by construction,
    and for a file directly under --input the id is ``<file name>:<row>``.
    """
    return [f"{relative}:{start + i}" for i in range(rows)]


@dataclass(frozen=True)
class Footer:
    path: str  # inside the input filesystem
    rows: int
    schema: pa.Schema
    id_nulls: int | None = None  # null ids by the footer's statistics; None: not recorded (or no id column)


@dataclass(frozen=True)
class InputColumns:
    id_column: str | None  # None: the first file has no such column; ids are positional (``positional_ids``)
    shape_columns: bool  # raw pixels sized per row by SHAPE_COLUMNS
    ids_as_text: bool  # some file's ids are text (or ids are positional): integer ids are compared as the text the output holds


def check_columns(
    location: Location, footers: list[Footer], *, image_column: str, id_column: str, raw_shape: tuple[int, int, int] | None
) -> InputColumns:
    """The columns the job reads, after checking them in every file; raise JobError (one line) otherwise."""
    first = footers[0].schema
    shape_columns = raw_shape is None and all(c in first.names for c in SHAPE_COLUMNS)
    raw = raw_shape is not None or shape_columns
    ids = id_column if id_column in first.names else None
    for footer in footers:
        where, names = location.uri_of(footer.path), footer.schema.names
        _check_image(where, footer.schema, image_column, raw, footers[0], location)
        if (id_column in names) != (ids is not None):
            raise JobError(_id_disagrees(location, footer, footers[0], id_column))
        if ids is not None:
            _check_id_type(where, footer.schema.field(ids))
        if shape_columns:
            _check_shape_columns(where, footer.schema, location.uri_of(footers[0].path))
    # Positional ids ("<path>:<row>") are text too: the final check hashes them as such.
    as_text = ids is None or not all(_is_integer(f.schema.field(ids).type) for f in footers)
    return InputColumns(ids, shape_columns, as_text)


def _check_image(where: str, schema: pa.Schema, column: str, raw: bool, first: Footer, location: Location) -> None:
    if column not in schema.names:
        also = "" if schema is first.schema else f", which {location.uri_of(first.path)} has"
        raise JobError(f"{where}: no column {column!r} (columns: {', '.join(schema.names)}){also}; every file needs the "
                       "image column: pass --image-column, or move this file out of --input")
    type_ = schema.field(column).type
    if not (_is_bytes(type_) or (raw and _is_pixel_list(type_))):
        expected = "image bytes (binary) or raw pixels (a list of uint8)" if raw else "encoded image bytes (binary)"
        hint = "" if raw else "; raw pixels also need --raw-shape H,W,C or height/width/channels columns"
        raise JobError(f"{where}: column {column!r} is {type_}, expected {expected}{hint}; pass --image-column naming "
                       "the image column")


def _id_disagrees(location: Location, footer: Footer, first: Footer, id_column: str) -> str:
    has, lacks = (footer, first) if id_column in footer.schema.names else (first, footer)
    return (f"{location.uri_of(lacks.path)}: no id column {id_column!r}, which {location.uri_of(has.path)} has; ids must "
            f"come from one column in every file: add it to every file, or pass --id-column naming a column every file "
            f"has ({POSITIONAL_IDS})")


def _check_id_type(where: str, field: pa.Field) -> None:
    if not (_is_text(field.type) or _is_integer(field.type)):
        raise JobError(f"{where}: id column {field.name!r} is {field.type}; ids must be strings or integers: pass "
                       f"--id-column naming such a column ({POSITIONAL_IDS})")


def _check_shape_columns(where: str, schema: pa.Schema, first: str) -> None:
    for column in SHAPE_COLUMNS:
        if column not in schema.names or not pa.types.is_integer(schema.field(column).type):
            found = schema.field(column).type if column in schema.names else "missing"
            raise JobError(f"{where}: column {column!r} is {found}, but {first} sizes raw pixels per row by integer "
                           f"{'/'.join(SHAPE_COLUMNS)} columns; every file needs them, or pass --raw-shape H,W,C")


def _is_bytes(type_: pa.DataType) -> bool:
    return pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_)


def _is_pixel_list(type_: pa.DataType) -> bool:
    if isinstance(type_, pa.ExtensionType):  # e.g. a fixed-shape tensor column: its storage is a fixed-size list
        type_ = type_.storage_type
    is_list = pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)
    return is_list and pa.types.is_uint8(type_.value_type)


def _unwrap_dictionary(type_: pa.DataType) -> pa.DataType:
    return type_.value_type if pa.types.is_dictionary(type_) else type_


def _is_text(type_: pa.DataType) -> bool:
    type_ = _unwrap_dictionary(type_)
    return pa.types.is_string(type_) or pa.types.is_large_string(type_) or pa.types.is_string_view(type_)


def _is_integer(type_: pa.DataType) -> bool:
    return pa.types.is_integer(_unwrap_dictionary(type_))
