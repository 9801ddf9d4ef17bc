"""Gather prediction rows by input file and commit each file's part once all its rows are in.

Use where rows of several input files arrive interleaved, and possibly twice: the Ray driver
consuming the dataset's stream (a block re-executed after an actor died comes again), and a
Spark task writing the files of its partition. Every row carries its input file (an index
into the plan's files) and its position in that file, added by ``with_position`` where the
row is read. A position seen before is dropped, so a re-executed block cannot duplicate a
row, and a file's part is written (``commit.Parts.write``) the moment its last position
arrives: a driver killed afterwards loses nothing that was committed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runners.commit import Parts
from runners.source import InputFile

FILE = "input_file_index"  # int32: index into the plan's files
ROW = "input_row"  # int64: the row's position in its input file


def with_position(table: pa.Table, files: np.ndarray, rows: np.ndarray) -> pa.Table:
    """``table`` plus each row's input file index and position."""
    return table.append_column(FILE, pa.array(files, pa.int32())).append_column(ROW, pa.array(rows, pa.int64()))


def positions(index: int, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The FILE and ROW values of ``count`` consecutive rows of one file from ``start``."""
    return np.full(count, index, np.int32), np.arange(start, start + count, dtype=np.int64)


class _FileRows:
    """The rows of one input file received so far, each position once."""

    def __init__(self, rows: int) -> None:
        self.seen = np.zeros(rows, dtype=bool)
        self.tables: list[pa.Table] = []

    def add(self, table: pa.Table) -> bool:
        """Keep the rows at positions not seen yet; True once every position has arrived."""
        rows = table.column(ROW).to_numpy()
        _, first = np.unique(rows, return_index=True)  # a position twice within one batch counts once
        keep = np.zeros(len(rows), dtype=bool)
        keep[first] = ~self.seen[rows[first]]
        self.seen[rows[keep]] = True
        if keep.any():
            self.tables.append(table.filter(pa.array(keep)))
        return bool(self.seen.all())

    def table(self) -> pa.Table:
        """All rows, in input order (so a part's bytes do not depend on arrival order)."""
        table = pa.concat_tables(self.tables)
        return table.take(pc.sort_indices(table.column(ROW)))


class PartCollector:
    """Rows in, committed parts out: one per input file, written once all its rows arrived."""

    def __init__(self, parts: Parts, files: Sequence[InputFile]) -> None:
        self.parts = parts
        self.files = files  # the plan's files, indexed by the FILE column
        self.open: dict[int, _FileRows] = {}
        self.committed: set[int] = set()

    def add(self, table: pa.Table) -> list[tuple[str, int]]:
        """Take rows (with FILE and ROW columns); returns (name, rows) of the parts this committed."""
        done = []
        for index in np.unique(table.column(FILE).to_numpy()).tolist():
            if index in self.committed:
                continue  # a re-executed block of a file already written: nothing new in it
            rows = table.filter(pc.equal(table.column(FILE), index))
            file = self.files[index]
            pending = self.open.setdefault(index, _FileRows(file.rows))
            if pending.add(rows):
                done.append((self.parts.write(file, pending.table()), file.rows))
                del self.open[index]
                self.committed.add(index)
        return done

    def check_complete(self) -> None:
        """Raise if a file whose rows began to arrive did not get all of them (no part was written)."""
        if self.open:
            index, pending = next(iter(self.open.items()))
            file = self.files[index]
            raise RuntimeError(f"{len(self.open)} input files got only some of their rows (e.g. {file.path}: "
                               f"{int(pending.seen.sum())} of {file.rows}); their parts were not written")
