"""Turn Batch Transform's ``.out`` objects into our output: one part per input file.

Use after a transform, local or on AWS. Batch Transform writes ``<shard>.out`` only when the
whole shard succeeded, so a shard without one becomes error rows (every id of the shard,
``error`` saying why) instead of lost rows; so does a ``.out`` whose ids differ from its
shard's. Images that were too big to send (``FileShards.oversized``) become error rows too.
The rows of each input file's shards are handed to ``write`` (the job's ``Parts.write``,
which commits the file's part atomically); ``job.driver.finish_job`` then verifies every part.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.output.rows import error_table
from runners.sagemaker.serving.handler import ID_COLUMN
from runners.sagemaker.shard import FileShards
from storage import Location, storage_errors

OUT_SUFFIX = ".out"  # Batch Transform names each output object <input object name>.out
NO_OUT = "SageMaker wrote no .out object for shard {shard}: the shard failed as a whole ({why})"


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
            why = (failures or {}).get(shard, "see the transform job's CloudWatch logs")
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
    ids = _read(shard_location, shard_location.join(shard), columns=[ID_COLUMN]).column(ID_COLUMN).to_pylist()
    out_path = out_location.join(shard + OUT_SUFFIX)
    with storage_errors(out_location.uri_of(out_path)):
        info = out_location.filesystem.get_file_info(out_path)
    if info.type == pafs.FileType.NotFound:
        return error_table(ids, [NO_OUT.format(shard=shard, why=why)] * len(ids), schema), None
    table = _read(out_location, out_path)
    if not table.schema.equals(schema, check_metadata=False) or sorted(table.column("id").to_pylist()) != sorted(ids):
        reason = f"{shard}{OUT_SUFFIX} does not hold one output row per shard row (schema {table.schema.names}, {table.num_rows} rows for {len(ids)} ids)"
        return error_table(ids, [reason] * len(ids), schema), None
    return table.cast(schema), _written_at(info)


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
