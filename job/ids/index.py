"""The table's ids index: every part's ids as 64-bit hashes, in segments, so a night reads what it asks about.

A finished run's manifest names the index's newest segment (``_index/<run id>.ids``), whose footer
names every segment of the index, oldest first. A segment holds the ids of the input files one run
read (its new and redone files; a first run's, all of them), sorted by hash, with a Bloom filter of
them beside it (``job.ids.segment``: its files on disk). A file's ids are those of the newest
segment listing it; the table's files are the caller's to say (``among``, ``table``).

What a run asks (``held``): which of some hashes (a night's new ids, the parts it wrote) the table's
kept files hold. Per segment it reads the filter, then only the row groups holding a hash the filter
cannot rule out: 10 new files of 1,000 ids against 100,000,000 ids read 200 MB of filter and a few
row groups, not 1.2 GB of hashes and files. The final check asks it too (``job.night.check``), so
no run sorts the whole table's hashes, and none rewrites them:

A run adds one segment (``extended``): its own files', merged with the newest segments before it
while their rows are at most ``MERGE_RATIO`` times its own. Segments then number about log2 of the
table's nights, and an id is rewritten about log2(nights) times in the table's life, not every night;
a merge drops the rows of files the table no longer holds or a newer segment lists.

Read whole, and written again as one segment by the run: an index of the earlier layout (one Parquet
row per file: ``input_file``, ``hashes``), and one written with an earlier id hash
(``job.input.unique_ids.ID_HASH_VERSION``), which ``remade`` makes again from the parts it names.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow.parquet as pq

from job.ids.hashing import ID_HASH_VERSION
from job.ids.hashes_by_file import HashesByFile
from job.ids.segment import INDEX_DIR, INDEX_SUFFIX, Segment, files_name, filter_name, read_segment
from job.ids.hashing import part_hashes  # a part's ids hashed as the final check hashes them
from storage import Location, storage_errors
from storage.parallel import map_in_order

PART_READ_THREADS = 16  # parts' id columns read at once when an index is remade: mostly the store's latency
MERGE_RATIO = 2


@dataclass(frozen=True)
class IdIndex:
    """The table's ids index as a run reads it: its segments' footers, oldest first; hashes only where asked."""

    output: Location  # the table's: its segments lie under it, and the next is written there
    segments: tuple[Segment, ...] = ()
    hash_version: int = ID_HASH_VERSION  # the id hash it was written with (an index without the record: 1)
    # Each segment's filter once read, by name: a night asks twice (its new ids, then its parts'), reading each once.
    filters: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def read(cls, output: Location, name: str) -> IdIndex:
        """The index whose newest segment is ``name`` under ``output``; a one-line JobError when it cannot be read."""
        head, version, names = read_segment(output, name)
        return cls(output, tuple(head if other == name else read_segment(output, other)[0] for other in names), version)

    @classmethod
    def of_files(cls, output: Location, hashes: HashesByFile | Mapping[str, np.ndarray]) -> IdIndex:
        """An index, not written yet, of ``hashes`` (its input files' ids' hashes), in this version's hash."""
        return cls(output, (Segment.of(_by_file(hashes)),))

    @property
    def files(self) -> list[str]:
        """Every input file the index lists, sorted."""
        return sorted({file for segment in self.segments for file in segment.files})

    def held(self, fresh: np.ndarray, among: Collection[str]) -> dict[str, np.ndarray]:
        """{input file of ``among``: the hashes of ``fresh`` it holds}, only files holding one, sorted by file."""
        candidates = np.unique(fresh)
        wanted = set(among)
        newest = _newest(self.segments)
        found: dict[str, list[np.ndarray]] = {}
        for number, segment in enumerate(self.segments):
            live = np.fromiter((f in wanted and newest[f] == number for f in segment.files), bool, len(segment.files))
            if len(candidates) == 0 or segment.rows == 0 or not live.any():
                continue
            if segment.loaded is None and segment.name not in self.filters:
                self.filters[segment.name] = segment.filter(self.output)
            hashes, owners = segment.near(self.output, candidates, self.filters.get(segment.name))
            at = np.flatnonzero(_in_sorted(hashes, candidates))
            at = at[live[owners[at]]]
            for owner in np.unique(owners[at]).tolist():
                found.setdefault(segment.files[owner], []).append(hashes[at[owners[at] == owner]])
        return {file: np.unique(np.concatenate(found[file])) for file in sorted(found)}

    def extended(self, run_id: str, table: Iterable[str], written: HashesByFile | Mapping[str, np.ndarray]) -> list[str]:
        """Write this run's segment: the hashes of the files it read (``written``, by input file), merged
        with the newest segments before it (see the module docstring); ``table``: every input file the table now
        holds. Returns the index's segments, oldest first: the last names it in the manifest."""
        kept = list(self.segments)
        merged = [Segment.of(_by_file(written))]
        if any(segment.loaded is not None for segment in kept):
            merged, kept = kept + merged, []  # an index read whole is written whole, once
        while kept and kept[-1].rows <= MERGE_RATIO * sum(segment.rows for segment in merged):
            merged.insert(0, kept.pop())
        names = [segment.name for segment in kept] + [f"{INDEX_DIR}/{run_id}{INDEX_SUFFIX}"]
        _merged(self.output, merged, set(table)).write(self.output, names[-1], names)
        return names

    def remade(self, parts: Mapping[str, str], ids_as_text: bool) -> IdIndex:
        """This index in this version's id hash, from the parts that hold its files (``parts``: input file -> part
        under the output), read once; a file whose part is gone is left out (its file runs again, and its new part
        is read by the final check)."""
        output, files = self.output, self.files
        print(f"{output.uri}: the table's id index was written with an earlier id hash; reading the id column of its "
              f"{len(files)} parts once to make it again", file=sys.stderr)
        def hashes_of(file: str) -> tuple[str, np.ndarray | None]:
            path = output.join(parts[file])
            with storage_errors(output.uri_of(path)):
                try:
                    opened = output.filesystem.open_input_file(path)
                except FileNotFoundError:
                    return file, None
                with opened as f:
                    ids = pq.ParquetFile(f).read(columns=["id"], use_threads=False).column("id")  # as verify.read_part_columns
                    return file, part_hashes(ids, ids_as_text)

        known = [file for file in files if file in parts]
        found = map_in_order(hashes_of, known, threads=min(PART_READ_THREADS, max(1, len(known))))
        return IdIndex.of_files(output, {file: hashes for file, hashes in found if hashes is not None})

def write_index(output: Location, run_id: str, hashes: HashesByFile | Mapping[str, np.ndarray]) -> str:
    """Write an index of ``hashes`` (its input files' ids' hashes) alone; returns its name under the output."""
    hashes = _by_file(hashes)
    return IdIndex(output).extended(run_id, hashes.names, hashes)[-1]


def index_files(segments: Iterable[str]) -> set[str]:
    """The files under the output that an index of these segments is made of."""
    return {name for segment in segments for name in (segment, filter_name(segment), files_name(segment))}


def _merged(output: Location, segments: list[Segment], table: set[str]) -> Segment:
    """One segment of these (oldest first), each file's rows from the newest listing it, files not in ``table`` dropped."""
    if len(segments) == 1 and segments[0].loaded is not None and all(file in table for file in segments[0].files):
        return segments[0]  # a run's own segment, every file in the table: already as written (no copy of its files)
    newest = _newest(segments)
    files = tuple(sorted(file for file in newest if file in table))
    numbers = {file: i for i, file in enumerate(files)}
    hashes, owners = [], []
    for number, segment in enumerate(segments):
        if not segment.files:
            continue
        # Each of the segment's files' number in the merged one; -1: its rows are dropped.
        renumbered = np.array([numbers[f] if newest[f] == number and f in numbers else -1 for f in segment.files], np.int32)
        their_hashes, their_owners = segment.whole(output)
        new_owners = renumbered[their_owners]
        keep = new_owners >= 0
        hashes.append(their_hashes[keep])
        owners.append(new_owners[keep])
    if not hashes:
        return Segment.sorted_from("", files, np.empty(0, np.uint64), np.empty(0, np.int32))
    return Segment.sorted_from("", files, np.concatenate(hashes), np.concatenate(owners).astype(np.int32, copy=False))


def _by_file(hashes: HashesByFile | Mapping[str, np.ndarray]) -> HashesByFile:
    """Hashes by input file as the index takes them: a mapping ({file: hashes}, a few files) is made one."""
    return hashes if isinstance(hashes, HashesByFile) else HashesByFile.of(hashes)


def _newest(segments: Iterable[Segment]) -> dict[str, int]:
    """Each file's newest segment (by number, oldest first): the one whose rows are the file's ids."""
    return {file: number for number, segment in enumerate(segments) for file in segment.files}


def _in_sorted(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per value: whether ``wanted`` (sorted, not empty) holds it; a search of each, not np.isin's sort of both."""
    places = np.minimum(np.searchsorted(wanted, values), len(wanted) - 1)
    return wanted[places] == values
