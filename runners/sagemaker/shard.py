"""Split the planned input into the Parquet shards Batch Transform sends, one per request.

Use before any transform, local or on AWS. Batch Transform cannot split Parquet, and it
sends each input object as one request no larger than ``MaxPayloadInMB``; each object's
``.out`` is written only if the whole object succeeded. So each planned input file is cut
into consecutive row ranges whose Parquet bytes fit the cap (encoded images barely
compress, so the in-memory size is a close guess; a shard that still comes out too big is
halved). A shard carries ``id`` (our row ids) and the image column (plus per-row shape
columns for raw pixels; with several models, ``FILE``: the index of its input file in the plan, so the
handler runs only the models that score that file). A single image bigger than the cap cannot be sent at all: it
becomes an error row here, so nothing is lost; so does an image object that could not be read
(``job.input.objects``: gone since the plan, too large), with the reader's reason.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from runners.sagemaker.serving.handler import ID_COLUMN
from job.input.objects import READ_ERROR
from job.input.plan import SHAPE_COLUMNS, InputPlan, read_file
from job.output.parts import FILE
from storage import Location, storage_errors

MB = 1024 * 1024
# Rows read at a time while filling a shard: small, so a shard lands close to the cap.
READ_ROWS = 16
# Room for the Parquet footer and page headers, which the in-memory size does not count.
FOOTER_MARGIN = 64 * 1024


@dataclass
class FileShards:
    """What one planned input file became: its shards, and the rows it could not send."""

    shards: list[str] = field(default_factory=list)  # shard object names, in row order
    oversized: dict[str, str] = field(default_factory=dict)  # id -> why it could not be sent (too big, or not read)


@dataclass
class Sharding:
    files: list[FileShards] = field(default_factory=list)  # one per planned input file, in plan order

    @property
    def shards(self) -> list[str]:
        """Every shard object name, in input order."""
        return [shard for file in self.files for shard in file.shards]


def write_shards(plan: InputPlan, location: Location, max_payload_mb: int, file_column: bool = False) -> Sharding:
    """Write ``shard-FFFFF-NNNN.parquet`` objects under ``location``; returns their names.

    ``file_column`` (several models): each shard also carries ``FILE``, its input file's index in ``plan``.
    """
    cap = max_payload_mb * MB
    sharding = Sharding()
    with storage_errors(location.uri):
        location.filesystem.create_dir(location.path, recursive=True)
    for index, file in enumerate(plan.files):
        shards = FileShards()
        for number, table in enumerate(_file_shards(plan, index, cap, shards.oversized, file_column)):
            name = f"shard-{index:05d}-{number:04d}.parquet"
            for part, data in enumerate(_serialize(table, cap)):
                part_name = name if part == 0 else name.replace(".parquet", f"-{part}.parquet")
                _put(location, part_name, data)
                shards.shards.append(part_name)
        sharding.files.append(shards)
    return sharding


def _file_shards(plan: InputPlan, index: int, cap: int, oversized: dict[str, str],
                 file_column: bool) -> Iterator[pa.Table]:
    """Tables of consecutive rows of the plan's ``index``-th file, each about ``cap`` bytes or less in memory."""
    budget, pending, size = cap - FOOTER_MARGIN, [], 0
    for ids, records in read_file(plan, plan.files[index], READ_ROWS):
        ids, records = _read_rows(ids, records, oversized)
        table = _shard_table(plan, ids, records, index if file_column else None)
        for row in _rows_that_fit(table, budget, cap, oversized):
            if pending and size + row.nbytes > budget:
                yield pa.concat_tables(pending)
                pending, size = [], 0
            pending.append(row)
            size += row.nbytes
    if pending:
        yield pa.concat_tables(pending)


def _read_rows(ids: list[str], records: pa.RecordBatch, unsent: dict[str, str]) -> tuple[list[str], pa.RecordBatch]:
    """The rows that were read; the image objects that were not go to ``unsent`` with the reader's reason."""
    if READ_ERROR not in records.schema.names or records.column(READ_ERROR).null_count == records.num_rows:
        return ids, records
    reasons = records.column(READ_ERROR).to_pylist()
    unsent.update({row_id: why for row_id, why in zip(ids, reasons) if why is not None})
    read = [why is None for why in reasons]
    return [row_id for row_id, ok in zip(ids, read) if ok], records.filter(pa.array(read))


def _rows_that_fit(table: pa.Table, budget: int, cap: int, oversized: dict[str, str]) -> list[pa.Table]:
    """The table (or, when it is over budget, its rows one by one) minus rows bigger than the cap."""
    if table.nbytes <= budget:
        return [table]
    rows = [table.slice(i, 1) for i in range(table.num_rows)]
    for row in rows:
        if row.nbytes > budget:
            oversized[row.column(ID_COLUMN)[0].as_py()] = (
                f"image of {row.nbytes / MB:.1f} MB exceeds MaxPayloadInMB={cap // MB}; raise --max-payload-mb (max 100)"
            )
    return [row for row in rows if row.nbytes <= budget]


def _shard_table(plan: InputPlan, ids: list[str], records: pa.RecordBatch, index: int | None) -> pa.Table:
    """The rows as a shard carries them; ``index``: their input file's, in ``FILE`` (None: no such column)."""
    columns = {ID_COLUMN: pa.array(ids, pa.string()), plan.image_column: records.column(plan.image_column)}
    if plan.shape_columns:
        columns.update({c: records.column(c) for c in SHAPE_COLUMNS})
    if index is not None:
        columns[FILE] = pa.array([index] * len(ids), pa.int32())
    return pa.table(columns)


def _serialize(table: pa.Table, cap: int) -> list[bytes]:
    """Parquet bytes of ``table``, halved until every piece fits the cap."""
    sink = io.BytesIO()
    pq.write_table(table, sink)
    if sink.tell() <= cap or table.num_rows == 1:
        return [sink.getvalue()]
    half = table.num_rows // 2
    return _serialize(table.slice(0, half), cap) + _serialize(table.slice(half), cap)


def _put(location: Location, name: str, data: bytes) -> None:
    path = location.join(name)
    with storage_errors(location.uri_of(path)), location.filesystem.open_output_stream(path) as out:
        out.write(data)
