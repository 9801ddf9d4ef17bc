"""Turn Batch Transform's ``.out`` objects into our output: one part per input file.

Use after a transform, local or on AWS. Batch Transform writes ``<shard>.out`` only when the
whole shard succeeded, so a shard without one becomes error rows (every id of the shard,
``error`` saying why) instead of lost rows; so does a ``.out`` whose ids differ from its
shard's. Images that were too big to send (``FileShards.oversized``) become error rows too.
The rows of each input file's shards are handed to ``write`` (the job's ``Parts.write``,
which commits the file's part atomically); ``job.driver.finish_job`` then verifies every part.

Several models (``--models``): ``assemble_several`` splits each ``.out`` (``job.several.stages.rows_blob``'s table)
by model and hands each model's rows of each input file to that model's table (``ModelTable.write``); a shard without
a usable ``.out``, and an image too big to send, become error rows in every table that scores its file. The rows
tell each model's time in its calls and the run's decodes (``Assembled``), as the other engines' rows do.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.output.rows import error_table
from job.several.stages import rows_of_blob
from job.timeline import decode_of, device_seconds_of
from runners.sagemaker.serving.handler import ID_COLUMN, SENT_TIMES
from runners.sagemaker.shard import FileShards
from storage import Location, storage_errors

OUT_SUFFIX = ".out"  # Batch Transform names each output object <input object name>.out
NO_OUT = "SageMaker wrote no .out object for shard {shard}: the shard failed as a whole ({why})"
UNKNOWN_FAILURE = "see the transform job's CloudWatch logs"  # on AWS, why a shard failed is in its logs only


def assemble(
    files: Sequence[FileShards],
    shard_location: Location,
    out_location: Location,
    write: Callable[[int, pa.Table], object],
    schema: pa.Schema,
    failures: Mapping[str, str] | None = None,
    shard_done: Callable[[float, int], object] | None = None,
) -> list[str]:
    """Call ``write(index, rows)`` once per input file with all its output rows, in ``schema``
    (the job's ``job.output.rows.output_schema``, which every ``.out`` must have).

    Returns the shards that had no usable ``.out`` (their rows are error rows).

    ``failures`` maps a shard name to why it failed, when known (the local transform knows;
    on AWS the reason is in CloudWatch). ``shard_done(when, rows)`` hears of each shard the
    service finished: when its ``.out`` was written (the object's mtime), the job's timeline.
    """
    failed = []
    for index, file in enumerate(files):
        tables = []
        for shard in file.shards:
            why = (failures or {}).get(shard, UNKNOWN_FAILURE)
            table, written_at = _shard_output(shard, shard_location, out_location, why, schema)
            tables.append(table)
            failed += [] if written_at is not None else [shard]
            if written_at is not None and shard_done is not None:
                shard_done(written_at, table.num_rows)
        if file.oversized:
            tables.append(error_table(list(file.oversized), list(file.oversized.values()), schema))
        write(index, pa.concat_tables(tables))
    return failed


def _shard_output(shard: str, shard_location: Location, out_location: Location, why: str,
                  schema: pa.Schema) -> tuple[pa.Table, float | None]:
    """The shard's output rows, and when its ``.out`` was written (None: the rows are error rows, no usable ``.out``)."""
    ids = _shard_ids(shard, shard_location)
    out_path, info = _out_object(shard, out_location)
    if info is None:
        return error_table(ids, [NO_OUT.format(shard=shard, why=why)] * len(ids), schema), None
    table = _read(out_location, out_path)
    if not table.schema.equals(schema, check_metadata=False) or sorted(table.column("id").to_pylist()) != sorted(ids):
        reason = f"{shard}{OUT_SUFFIX} does not hold one output row per shard row (schema {table.schema.names}, {table.num_rows} rows for {len(ids)} ids)"
        return error_table(ids, [reason] * len(ids), schema), None
    return table.cast(schema), _written_at(info)


def _shard_ids(shard: str, shard_location: Location) -> list[str]:
    return _read(shard_location, shard_location.join(shard), columns=[ID_COLUMN]).column(ID_COLUMN).to_pylist()


def _out_object(shard: str, out_location: Location) -> tuple[str, pafs.FileInfo | None]:
    """The path of the shard's ``.out`` and what storage says of it (None: there is none)."""
    out_path = out_location.join(shard + OUT_SUFFIX)
    with storage_errors(out_location.uri_of(out_path)):
        info = out_location.filesystem.get_file_info(out_path)
    return out_path, None if info.type == pafs.FileType.NotFound else info


def _written_at(info: pafs.FileInfo) -> float:
    """When an ``.out`` was written, for the timeline. S3 keeps whole seconds (LastModified): the write lies
    somewhere within that second, so it is read as the second's end (never later than now), or a shard done
    in the run's first second would be placed before the run began (a negative start-up)."""
    if info.mtime is None:
        return time.time()
    written = info.mtime.timestamp()
    return min(written + 1.0, time.time()) if info.mtime.microsecond == 0 else written


def _read(location: Location, path: str, columns: list[str] | None = None) -> pa.Table:
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_file(path) as f:
        return pq.read_table(io.BytesIO(f.read()), columns=columns)


@dataclass(frozen=True)
class ModelTable:
    """One model's table in a run of several: what its rows must hold, which input files it scores, how they commit."""

    schema: pa.Schema  # its output rows' columns (its ``Parts.schema``), which its rows of every ``.out`` must have
    files: frozenset[int] | None  # the run's input files it scores, by index (None: every one)
    write: Callable[[int, pa.Table], object]  # commits its part of the run's ``index``-th input file (``Parts.write``)


@dataclass
class Assembled:
    """What the ``.out`` objects of a run of several models told: the shards that failed, each model's figures, the
    run's decodes (each image once, whatever the models that took its pixels)."""

    failed: list[str]
    progress: list[list[tuple[float, int]]]  # each model's (when a shard's .out was written, its rows of the shard)
    model_seconds: list[float]  # each model's time in its calls, as the container measured it
    decodes: int = 0
    decode_seconds: float = 0.0

    def add(self, number: int, written_at: float, rows: pa.Table) -> None:
        """Count the model ``number``'s rows of a shard whose ``.out`` was written at ``written_at``."""
        self.progress[number].append((written_at, rows.num_rows))
        self.model_seconds[number] += device_seconds_of(rows)
        decodes, seconds = decode_of(rows)
        self.decodes, self.decode_seconds = self.decodes + decodes, self.decode_seconds + seconds


def assemble_several(
    files: Sequence[FileShards],
    shard_location: Location,
    out_location: Location,
    tables: Sequence[ModelTable],
    failures: Mapping[str, str] | None = None,
) -> Assembled:
    """Call each model's ``write(index, rows)`` once per input file it scores, with all its rows of that file.

    ``failures``: as for ``assemble``.
    """
    assembled = Assembled([], [[] for _ in tables], [0.0] * len(tables))
    for index, file in enumerate(files):
        schemas = {number: table.schema for number, table in enumerate(tables)
                   if table.files is None or index in table.files}
        rows: dict[int, list[pa.Table]] = {number: [schema.empty_table()] for number, schema in schemas.items()}
        for shard in file.shards:
            why = (failures or {}).get(shard, UNKNOWN_FAILURE)
            for number, table in _models_output(shard, shard_location, out_location, why, schemas, assembled).items():
                rows[number].append(table)
        for number, schema in schemas.items():
            if file.oversized:
                rows[number].append(error_table(list(file.oversized), list(file.oversized.values()), schema))
            tables[number].write(index, pa.concat_tables(rows[number]))
    return assembled


def _models_output(shard: str, shard_location: Location, out_location: Location, why: str,
                   schemas: Mapping[int, pa.Schema], assembled: Assembled) -> dict[int, pa.Table]:
    """Each scoring model's rows of the shard, in its schema: its ``.out``'s, or error rows for every one of them
    when the shard has no usable ``.out`` (then it goes to ``assembled.failed``)."""
    ids = _shard_ids(shard, shard_location)
    out_path, info = _out_object(shard, out_location)
    by_model, problem = ({}, NO_OUT.format(shard=shard, why=why)) if info is None else \
        _split_out(shard, _read(out_location, out_path), schemas, ids)
    if problem is not None:
        assembled.failed.append(shard)
        return {number: error_table(ids, [problem] * len(ids), schema) for number, schema in schemas.items()}
    written_at = _written_at(info)
    for number, table in by_model.items():
        assembled.add(number, written_at, table)
    return {number: table.select(schemas[number].names).cast(schemas[number]) for number, table in by_model.items()}


def _split_out(shard: str, out: pa.Table, schemas: Mapping[int, pa.Schema],
               ids: list[str]) -> tuple[dict[int, pa.Table], str | None]:
    """The ``.out``'s rows by model, or why it is not a usable answer to the shard (None: it is)."""
    try:
        by_model = dict(rows_of_blob(out))
    except (KeyError, pa.ArrowInvalid) as e:
        return {}, f"{shard}{OUT_SUFFIX} is not several models' rows (columns {out.schema.names}: {e})"
    if sorted(by_model) != sorted(schemas):
        return {}, (f"{shard}{OUT_SUFFIX} holds the rows of models {sorted(by_model)}, but its input file is scored by "
                    f"models {sorted(schemas)}")
    for number, table in by_model.items():
        if not _answers(table, schemas[number], ids):
            return {}, (f"{shard}{OUT_SUFFIX} does not hold one output row per shard row for model {number} "
                        f"(columns {table.column_names}, {table.num_rows} rows for {len(ids)} ids)")
    return by_model, None


def _answers(rows: pa.Table, schema: pa.Schema, ids: list[str]) -> bool:
    """Whether a model's rows of a ``.out`` are one row per id of its shard, in its schema beside ``SENT_TIMES``."""
    if set(rows.column_names) != {*schema.names, *SENT_TIMES}:
        return False
    return rows.select(schema.names).schema.equals(schema, check_metadata=False) and \
        sorted(rows.column(ID_COLUMN).to_pylist()) == sorted(ids)
