"""The table's ids index as one run reads it: every kept part's id hashes, read once, searched in place.

``write_index`` writes it (one row per input file: its path relative to --input, its ids' 64-bit
hashes sorted). A run reads it once (``IdIndex.read``) and asks it two
things: the hashes of some files (the final check's parts kept unread, the files gone that a
night compares), and which of a night's new hashes the table already holds (``held``). The
second is a binary search of every table hash among the few new ones, sorted: time linear in
the table with a small constant, and no sort or copy of the table's hashes, so a night of ten
new files on a table of millions of ids costs a read of the index and one pass over it.

An index records the id hash's version it was written with (``job.input.unique_ids.ID_HASH_VERSION``);
one of another version holds hashes this run's ids cannot be compared with, so ``remade`` makes it
again from the parts it names (their id columns, read once), and the run writes the new one.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.errors import JobError
from job.input.unique_ids import ID_HASH_VERSION
from job.output.table import INDEX_DIR, INDEX_HASH_KEY, INDEX_SUFFIX
from job.output.verify import part_hashes  # a part's ids hashed as the final check hashes them
from storage import Location, storage_errors
from storage.parallel import map_in_order

PART_READ_THREADS = 16  # parts' id columns read at once when an index is remade: mostly the store's latency

# Table hashes searched at a time: bounds the search's temporaries (positions, matches) to a few MB.
SEARCH_CHUNK = 1 << 20


@dataclass(frozen=True)
class IdIndex:
    files: list[str]  # input files (relative to --input), in the index's order
    offsets: np.ndarray  # file i's hashes are hashes[offsets[i]:offsets[i + 1]]
    hashes: np.ndarray  # uint64: every file's hashes, each file's sorted
    hash_version: int = ID_HASH_VERSION  # the id hash it was written with (an index without the record: 1)

    @classmethod
    def read(cls, output: Location, name: str) -> IdIndex:
        """The index ``name`` under ``output``; a one-line JobError when it cannot be read."""
        path = output.join(name)
        with storage_errors(output.uri_of(path)), output.filesystem.open_input_stream(path) as f:
            data = f.read()
        try:
            # Read in place (a Python file object would copy every page read once more: +0.8 GB at 100M ids).
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError) as e:  # a truncated or overwritten index: the table cannot vouch for its parts
            raise JobError(f"{output.uri_of(path)}: the table's id index cannot be read ({str(e).splitlines()[0]}); pass "
                           "--overwrite to redo the table") from e
        cells = table.column("hashes").combine_chunks()
        offsets = cells.offsets.to_numpy().astype(np.int64)
        hashes = cells.values.to_numpy() if len(cells.values) else np.empty(0, np.uint64)
        version = int((table.schema.metadata or {}).get(INDEX_HASH_KEY.encode(), b"1"))
        return cls(table.column("input_file").to_pylist(), offsets - offsets[0], hashes, version)

    @classmethod
    def of_files(cls, hashes: Mapping[str, np.ndarray]) -> IdIndex:
        """An index of ``hashes`` ({input file: its ids' hashes}), in this version's hash, each file's sorted.

        Sorted where they are not already (the kept files' hashes come sorted from the last index): one copy, not two.
        """
        files = sorted(hashes)
        sizes = np.fromiter((len(hashes[file]) for file in files), np.int64, len(files))
        flat = np.concatenate([_sorted(hashes[file]) for file in files]) if files else np.empty(0, np.uint64)
        return cls(files, np.concatenate(([0], np.cumsum(sizes))), flat.astype(np.uint64, copy=False))

    def write(self, output: Location, run_id: str) -> str:
        """Write this index under ``output`` in one PUT; returns its name there."""
        offsets = pa.array(self.offsets, pa.int32())  # a list column's: 2^31 ids at most
        table = pa.table({"input_file": pa.array(self.files, pa.string()),
                          "hashes": pa.ListArray.from_arrays(offsets, pa.array(self.hashes, pa.uint64()))},
                         metadata={INDEX_HASH_KEY: str(self.hash_version)})
        sink = pa.BufferOutputStream()
        # Hashes are random 64-bit words: no dictionary or codec makes them smaller, and trying costs most of the write
        # (20,000,000 ids: 1.3 s with Parquet's defaults, 0.28 s without).
        pq.write_table(table, sink, use_dictionary=False, compression="none")
        name = f"{INDEX_DIR}/{run_id}{INDEX_SUFFIX}"
        with storage_errors(output.uri), output.writer(output.join(name)) as out:
            out.write(sink.getvalue())
        return name

    def remade(self, output: Location, parts: Mapping[str, str], ids_as_text: bool) -> IdIndex:
        """This index in this version's id hash, from the parts that hold its files (``parts``: input file -> part
        under ``output``), read once; a file whose part is gone is left out (its file runs again, and its new part
        is read by the final check)."""
        print(f"{output.uri}: the table's id index was written with an earlier id hash; reading the id column of its "
              f"{len(self.files)} parts once to make it again", file=sys.stderr)
        def hashes_of(file: str) -> tuple[str, np.ndarray | None]:
            path = output.join(parts[file])
            with storage_errors(output.uri_of(path)):
                try:
                    opened = output.filesystem.open_input_file(path)
                except FileNotFoundError:
                    return file, None
                with opened as f:
                    return file, part_hashes(pq.read_table(f, columns=["id"]).column("id"), ids_as_text)

        known = [file for file in self.files if file in parts]
        found = map_in_order(hashes_of, known, threads=min(PART_READ_THREADS, max(1, len(known))))
        return IdIndex.of_files({file: hashes for file, hashes in found if hashes is not None})

    def of(self, wanted: Iterable[str]) -> dict[str, np.ndarray]:
        """{input file: its ids' hashes} of the ``wanted`` files the index holds, in the index's order."""
        wanted = set(wanted)
        return {file: self._slice(i) for i, file in enumerate(self.files) if file in wanted}

    def held(self, fresh: np.ndarray, among: Collection[str]) -> dict[str, np.ndarray]:
        """{input file of ``among``: the hashes of ``fresh`` it holds}, only files holding one, in the index's order."""
        candidates = np.unique(fresh)
        if len(candidates) == 0 or len(self.hashes) == 0:
            return {}
        found = [start + self._matches(candidates, self.hashes[start:start + SEARCH_CHUNK])
                 for start in range(0, len(self.hashes), SEARCH_CHUNK)]
        at = np.concatenate(found)
        owners = np.searchsorted(self.offsets, at, side="right") - 1
        wanted = set(among)
        return {self.files[i]: np.unique(self.hashes[at[owners == i]]) for i in np.unique(owners).tolist()
                if self.files[i] in wanted}

    @staticmethod
    def _matches(candidates: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """Positions in ``hashes`` of the values ``candidates`` (sorted, unique) holds."""
        places = np.minimum(np.searchsorted(candidates, hashes), len(candidates) - 1)
        return np.flatnonzero(candidates[places] == hashes)

    def _slice(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i]:self.offsets[i + 1]]


def write_index(output: Location, run_id: str, hashes: Mapping[str, np.ndarray]) -> str:
    """Write the ids index ({input file: its ids' hashes}) in one PUT; returns its name under the output."""
    return IdIndex.of_files(hashes).write(output, run_id)


def _sorted(hashes: np.ndarray) -> np.ndarray:
    return hashes if len(hashes) < 2 or bool(np.all(hashes[1:] >= hashes[:-1])) else np.sort(hashes)
