"""Which data files of a shared table hold rows of the input files leaving it, wherever other writers moved them.

A night takes a replaced or deleted input file's rows out of the table by their lineage (the
``source_file`` column, ``job.output.rows.SOURCE``), not by file name: the platform's OPTIMIZE
merges our parts into files of its own, a DELETE rewrites them, another job appends its own. For
each data file of the table's current version ``split`` tells whether it holds only leaving rows
(removed whole), some (rewritten without them: ``rewrite_without``), or none (left alone). A file
is read only when neither our own records (a part of ours holds one input file) nor the format's
statistics (the column's min and max, which the formats keep as bounds) can tell.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from job.output.rows import SOURCE
from storage import Location, storage_errors
from storage.parallel import map_in_order

READ_THREADS = 16
REWRITTEN_PREFIX = "rewritten-"  # a file a night wrote in place of one that mixed leaving rows with others


@dataclass(frozen=True)
class DataFile:
    """One data file of the table's current version, as its log lists it."""

    path: str  # relative to the table's root
    low: str | None = None  # the min of its source_file column, where the log keeps statistics
    high: str | None = None  # the max

    def may_hold(self, leaving: frozenset[str]) -> bool:
        """Whether the statistics leave room for a leaving source (no statistics: they do)."""
        if self.low is None or self.high is None:
            return True
        return any(self.low <= source <= self.high for source in leaving)


@dataclass(frozen=True)
class Split:
    whole: tuple[str, ...]  # files whose every row leaves: removed
    mixed: tuple[str, ...]  # files holding leaving rows and others: rewritten without the leaving ones


def split(files: Sequence[DataFile], known: Mapping[str, str], leaving: frozenset[str],
          read_sources: Callable[[str], set[str | None]]) -> Split:
    """Sort the table's ``files`` by the leaving rows they hold; ``known``: our parts' one input file each."""
    whole, unsure = [], []
    for file in files:
        if file.path in known:
            if known[file.path] in leaving:
                whole.append(file.path)
        elif leaving and file.may_hold(leaving):
            unsure.append(file.path)
    mixed = []
    for path, sources in zip(unsure, map_in_order(read_sources, unsure, threads=min(READ_THREADS, max(1, len(unsure))))):
        held = sources & leaving
        if held:
            (whole if held == sources else mixed).append(path)
    return Split(tuple(whole), tuple(mixed))


def sources_of(output: Location, path: str) -> set[str | None]:
    """The distinct source_file values of a data file (a file without the column: {None}, never leaving)."""
    where = output.join(path)
    with storage_errors(output.uri_of(where)), output.filesystem.open_input_file(where) as f:
        parquet = pq.ParquetFile(f)
        if SOURCE not in parquet.schema_arrow.names:
            return {None}
        return set(pc.unique(parquet.read(columns=[SOURCE]).column(SOURCE)).to_pylist())


def rewrite_without(output: Location, path: str, leaving: frozenset[str], run_id: str) -> tuple[str, int]:
    """Write the rows of ``path`` that do not leave as a new file beside it; (its name, its rows)."""
    where = output.join(path)
    with storage_errors(output.uri_of(where)):
        table = pq.read_table(where, filesystem=output.filesystem)
        staying = table.filter(pc.invert(pc.fill_null(pc.is_in(table.column(SOURCE), pa.array(sorted(leaving))), False)))
        name = f"{REWRITTEN_PREFIX}{run_id}-{uuid.uuid4().hex}.parquet"
        pq.write_table(staying, output.join(name), filesystem=output.filesystem)
    return name, staying.num_rows
