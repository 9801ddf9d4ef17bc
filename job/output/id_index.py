"""The table's ids index: every part's ids as 64-bit hashes, in segments, so a night reads what it asks about.

A finished run's manifest names the index's newest segment (``_index/<run id>.ids``), whose footer
names every segment of the index, oldest first. A segment holds the ids of the input files one run
read (its new and redone files; a first run's, all of them): ``<name>.ids`` is Parquet of
(hash, file) sorted by hash, in row groups of ``ROWS_PER_GROUP``, its files and each row group's first
hash in its footer; ``<name>.bloom`` is a Bloom filter of its hashes (``job.output.bloom``, 2 bytes an
id). A file's ids are those of the newest segment listing it; a file no longer in the table has none.

What a run asks (``held``): which of some hashes (a night's new ids, the parts it wrote) the table's
kept files hold. Per segment it reads the filter, then only the row groups holding a hash the filter
cannot rule out: 10 new files of 1,000 ids against 100,000,000 ids read 200 MB of filter and a few
row groups, not 1.2 GB of hashes and files. The final check asks it too (``job.output.verify``), so
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

import json
import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.errors import JobError
from job.input.unique_ids import ID_HASH_VERSION
from job.output import bloom
from job.output.table import INDEX_DIR, INDEX_HASH_KEY, INDEX_SUFFIX
from job.output.verify import part_hashes  # a part's ids hashed as the final check hashes them
from storage import Location, storage_errors
from storage.parallel import map_in_order

PART_READ_THREADS = 16  # parts' id columns read at once when an index is remade: mostly the store's latency
# A row group is what a hash the filter lets through costs to read: 8,192 rows, 96 KB (the hash and its file). At
# 100,000,000 ids a night's 10,000 new ones let about 40 through; 64k-row groups read 8 times as much, for a footer
# 8 times smaller.
ROWS_PER_GROUP = 1 << 13
MERGE_RATIO = 2
FILTER_SUFFIX = ".bloom"
SEGMENT_KEY = "segment"  # a segment's schema metadata: JSON of its files, row groups' first hashes, the index's segments


@dataclass(frozen=True)
class Segment:
    """One run's files in the index, their ids' hashes sorted."""

    name: str  # its ``.ids`` file under the output (its filter beside it)
    files: tuple[str, ...]  # input files (relative to --input); its ``file`` column numbers them
    rows: int
    starts: np.ndarray  # uint64: the first hash of each row group
    # (hashes sorted, their files' numbers) of a segment held whole: one not written yet, or of the earlier layout.
    loaded: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, hashes: Mapping[str, np.ndarray]) -> Segment:
        """A segment, not written, of ``hashes`` ({input file: its ids' hashes})."""
        files = tuple(sorted(hashes))
        sizes = [len(hashes[file]) for file in files]
        flat = np.concatenate([hashes[f] for f in files]).astype(np.uint64, copy=False) if files else np.empty(0, np.uint64)
        owners = np.repeat(np.arange(len(files), dtype=np.int32), sizes)
        return cls.sorted_from("", files, flat, owners)

    @classmethod
    def sorted_from(cls, name: str, files: tuple[str, ...], hashes: np.ndarray, owners: np.ndarray) -> Segment:
        if len(hashes) > 1 and not bool(np.all(hashes[1:] >= hashes[:-1])):  # one segment merged alone is sorted
            order = np.argsort(hashes)  # equal hashes in any order: numpy's default sort is 2.3x its stable one here
            hashes, owners = hashes[order], owners[order]
        return cls(name, files, len(hashes), hashes[::ROWS_PER_GROUP], (hashes, owners))

    @property
    def filter_name(self) -> str:
        return self.name.removesuffix(INDEX_SUFFIX) + FILTER_SUFFIX

    def near(self, output: Location, candidates: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, their files' numbers) of the rows that may equal one of ``candidates`` (sorted, unique): the
        row groups holding a candidate its filter (``words``) lets through (a segment held whole: all its rows)."""
        if self.loaded is not None:
            return self.loaded
        empty = np.empty(0, np.uint64), np.empty(0, np.int32)
        if self.rows == 0:
            return empty
        maybe = candidates[bloom.may_hold(words, candidates)]
        groups = np.unique(np.searchsorted(self.starts, maybe, side="right") - 1)
        groups = groups[groups >= 0].tolist()
        if not groups:
            return empty
        path = output.join(self.name)
        with storage_errors(output.uri_of(path)), output.filesystem.open_input_file(path) as f:
            # pre_buffer: the groups' ranges are read together (concurrent GETs on S3), not one after another.
            table = pq.ParquetFile(f, pre_buffer=True).read_row_groups(groups, columns=["hash", "file"])
        return _column(table, "hash", np.uint64), _column(table, "file", np.int32)

    def filter(self, output: Location) -> np.ndarray:
        """Its Bloom filter's words, read into memory of their own: a buffer from Arrow's pool, or a stream's that grows
        by doubling, kept 380 MB of process memory for the 200 MB of a 100,000,000-id segment; this keeps 200."""
        path = output.join(self.filter_name)
        with storage_errors(output.uri_of(path)), output.filesystem.open_input_file(path) as f:
            size = f.size()
            if size != 8 * bloom.words_for(self.rows):
                raise JobError(f"{output.uri_of(path)}: the table's id index cannot be read (its filter has {size} bytes "
                               f"for {self.rows} ids); pass --overwrite to redo the table")
            words = np.empty(size // 8, "<u8")
            view, done = memoryview(words).cast("B"), 0
            while done < size:
                got = f.readinto(view[done:])
                if got == 0:
                    raise JobError(f"{output.uri_of(path)}: the table's id index cannot be read (its filter ended at "
                                   f"{done} of {size} bytes); pass --overwrite to redo the table")
                done += got
        return words

    def whole(self, output: Location) -> tuple[np.ndarray, np.ndarray]:
        """All its (hashes, files' numbers): what a merge reads."""
        if self.loaded is not None:
            return self.loaded
        path = output.join(self.name)
        with storage_errors(output.uri_of(path)), output.filesystem.open_input_file(path) as f:
            table = pq.read_table(pa.BufferReader(f.read_buffer()), columns=["hash", "file"])
        return _column(table, "hash", np.uint64), _column(table, "file", np.int32)

    def write(self, output: Location, name: str, segments: list[str]) -> None:
        """Write this segment (``loaded``) as ``name``, its filter first; ``segments``: the index's, itself last."""
        hashes, owners = self.loaded
        filter_name = name.removesuffix(INDEX_SUFFIX) + FILTER_SUFFIX
        with storage_errors(output.uri), output.writer(output.join(filter_name)) as out:
            out.write(bloom.build(hashes).astype("<u8", copy=False).tobytes())
        record = {"files": list(self.files), "starts": [int(h) for h in self.starts], "segments": segments}
        table = pa.table({"hash": pa.array(hashes, pa.uint64()), "file": pa.array(owners, pa.int32())},
                         metadata={INDEX_HASH_KEY: str(ID_HASH_VERSION), SEGMENT_KEY: json.dumps(record)})
        sink = pa.BufferOutputStream()
        # Hashes are random 64-bit words: no dictionary or codec makes them smaller, and trying costs most of the write
        # (20,000,000 ids: 1.3 s with Parquet's defaults, 0.28 s without). Row groups are found by ``starts``.
        pq.write_table(table, sink, row_group_size=ROWS_PER_GROUP, use_dictionary=False, compression="none",
                       write_statistics=False)
        with storage_errors(output.uri), output.writer(output.join(name)) as out:
            out.write(sink.getvalue())


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
        head, version, names = _read_segment(output, name)
        return cls(output, tuple(head if other == name else _read_segment(output, other)[0] for other in names), version)

    @classmethod
    def of_files(cls, output: Location, hashes: Mapping[str, np.ndarray]) -> IdIndex:
        """An index, not written yet, of ``hashes`` ({input file: its ids' hashes}), in this version's hash."""
        return cls(output, (Segment.of(hashes),))

    @property
    def files(self) -> list[str]:
        """Every input file the index lists, sorted."""
        return sorted({file for segment in self.segments for file in segment.files})

    def held(self, fresh: np.ndarray, among: Collection[str]) -> dict[str, np.ndarray]:
        """{input file of ``among``: the hashes of ``fresh`` it holds}, only files holding one, sorted by file."""
        candidates = np.unique(fresh)
        wanted = set(among)
        newest = self._newest()
        found: dict[str, list[np.ndarray]] = {}
        for number, segment in enumerate(self.segments):
            live = np.fromiter((f in wanted and newest[f] == number for f in segment.files), bool, len(segment.files))
            if len(candidates) == 0 or not live.any():
                continue
            if segment.loaded is None and segment.name not in self.filters:
                self.filters[segment.name] = segment.filter(self.output)
            hashes, owners = segment.near(self.output, candidates, self.filters.get(segment.name))
            at = np.flatnonzero(_in_sorted(hashes, candidates))
            at = at[live[owners[at]]]
            for owner in np.unique(owners[at]).tolist():
                found.setdefault(segment.files[owner], []).append(hashes[at[owners[at] == owner]])
        return {file: np.unique(np.concatenate(found[file])) for file in sorted(found)}

    def extended(self, run_id: str, table: Iterable[str], written: Mapping[str, np.ndarray]) -> list[str]:
        """Write this run's segment: the hashes of the files it read (``written``: {input file: hashes}), merged
        with the newest segments before it (see the module docstring); ``table``: every input file the table now
        holds. Returns the index's segments, oldest first: the last names it in the manifest."""
        kept = list(self.segments)
        merged = [Segment.of(written)]
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
                    return file, part_hashes(pq.read_table(f, columns=["id"]).column("id"), ids_as_text)

        known = [file for file in files if file in parts]
        found = map_in_order(hashes_of, known, threads=min(PART_READ_THREADS, max(1, len(known))))
        return IdIndex.of_files(output, {file: hashes for file, hashes in found if hashes is not None})

    def _newest(self) -> dict[str, int]:
        """Each file's newest segment (by number): the one whose rows are the file's ids."""
        return {file: number for number, segment in enumerate(self.segments) for file in segment.files}


def write_index(output: Location, run_id: str, hashes: Mapping[str, np.ndarray]) -> str:
    """Write an index of ``hashes`` ({input file: its ids' hashes}) alone; returns its name under the output."""
    return IdIndex(output).extended(run_id, hashes, hashes)[-1]


def index_files(segments: Iterable[str]) -> set[str]:
    """The files under the output that an index of these segments is made of."""
    return {name for segment in segments for name in (segment, segment.removesuffix(INDEX_SUFFIX) + FILTER_SUFFIX)}


def _merged(output: Location, segments: list[Segment], table: set[str]) -> Segment:
    """One segment of these (oldest first), each file's rows from the newest listing it, files not in ``table`` dropped."""
    newest = {file: number for number, segment in enumerate(segments) for file in segment.files}
    files = tuple(sorted(file for file in newest if file in table))
    if len(segments) == 1 and segments[0].loaded is not None and files == segments[0].files:
        return segments[0]  # a run's own segment, every file in the table: already as written
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


def _read_segment(output: Location, name: str) -> tuple[Segment, int, list[str]]:
    """A segment's footer: the segment (or, of the earlier layout, the index held whole), its id hash's version, and
    the index's segments it names (itself alone for the earlier layout)."""
    path = output.join(name)
    with storage_errors(output.uri_of(path)):
        try:
            with output.filesystem.open_input_file(path) as f:
                parquet = pq.ParquetFile(f)
                metadata = parquet.schema_arrow.metadata or {}
                legacy = "input_file" in parquet.schema_arrow.names
                table = parquet.read() if legacy else None
                rows = parquet.metadata.num_rows
        except (pa.ArrowException, OSError) as e:  # a truncated or overwritten index: the table cannot vouch for its parts
            raise JobError(f"{output.uri_of(path)}: the table's id index cannot be read ({str(e).splitlines()[0]}); pass "
                           "--overwrite to redo the table") from e
    version = int(metadata.get(INDEX_HASH_KEY.encode(), b"1"))
    if legacy:
        cells = table.column("hashes").combine_chunks()
        files = table.column("input_file").to_pylist()
        hashes = cells.values.to_numpy() if len(cells.values) else np.empty(0, np.uint64)
        offsets = cells.offsets.to_numpy()
        owners = np.repeat(np.arange(len(files), dtype=np.int32), np.diff(offsets))
        return Segment.sorted_from(name, tuple(files), hashes.astype(np.uint64, copy=False), owners), version, [name]
    if SEGMENT_KEY.encode() not in metadata:
        raise JobError(f"{output.uri_of(path)}: the table's id index cannot be read (a Parquet file, not an index "
                       "segment); pass --overwrite to redo the table")
    record = json.loads(metadata[SEGMENT_KEY.encode()])
    segment = Segment(name, tuple(record["files"]), rows, np.array(record["starts"], np.uint64))
    return segment, version, list(record["segments"])


def _in_sorted(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per value: whether ``wanted`` (sorted, not empty) holds it; a search of each, not np.isin's sort of both."""
    places = np.minimum(np.searchsorted(wanted, values), len(wanted) - 1)
    return wanted[places] == values


def _column(table: pa.Table, name: str, dtype: type) -> np.ndarray:
    column = table.column(name)
    return column.to_numpy() if column.num_chunks else np.empty(0, dtype)
