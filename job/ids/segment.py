"""One segment of the table's ids index (``job.ids.index``): the ids of the files one run read, on disk.

``<name>.ids`` is Parquet of (hash, file), sorted by hash, in row groups of ``ROWS_PER_GROUP`` rows;
its schema metadata holds the id hash's version and, as JSON, each row group's first hash, the
index's segments when it was written, and how many files it holds. ``<name>.files`` beside it is
Parquet of those files' names, sorted (the ``file`` column numbers them); ``<name>.bloom`` is a Bloom
filter of its hashes (``job.ids.bloom``). A segment answers which of some hashes it may hold by
reading its filter, then only the row groups the filter cannot rule out.

The names are a column of their own, not the footer's JSON as segments written before had them
(still read): a million names made a footer of 80 MB that Arrow and Parquet each copied while
writing it, and that every night read whole; as a sorted, compressed column they are a few MB.

An index of the earlier layout (one Parquet row per file: ``input_file``, ``hashes``) reads as one
segment held whole in memory (``loaded``), as does a segment made by a run and not written yet.
"""

from __future__ import annotations

import json
from itertools import pairwise
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.errors import JobError
from job.ids.hashing import ID_HASH_VERSION
from job.ids import bloom
from job.ids.hashes_by_file import HashesByFile
from storage import Location, storage_errors

# A row group is what a hash the filter lets through costs to read: 8,192 rows, 96 KB (the hash and its file). At
# 100,000,000 ids a night's 10,000 new ones let about 40 through; 64k-row groups read 8 times as much, for a footer
# 8 times smaller.
ROWS_PER_GROUP = 1 << 13
FILTER_SUFFIX = ".bloom"
FILES_SUFFIX = ".files"
SEGMENT_KEY = "segment"  # a segment's schema metadata: JSON of its row groups' first hashes, the index's segments, files

INDEX_DIR = "_index"  # <output>/_index/<run id>.ids: (input_file, id hashes) per part, in Parquet
# The index is Parquet of another schema than the table's: its name does not end in .parquet, so readers that
# glob the prefix for data files (DuckDB read_parquet('out/**/*.parquet'), polars) never take it for a part.
INDEX_SUFFIX = ".ids"
INDEX_HASH_KEY = "id_hash"  # the index's schema metadata: the id hash's version (job.ids.hashing.ID_HASH_VERSION)


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
    def of(cls, hashes: HashesByFile) -> Segment:
        """A segment, not written, of ``hashes`` (its files' ids' hashes): its files sorted by name."""
        names = hashes.names
        if all(a < b for a, b in pairwise(names)):  # a run's files, read in the plan's order: sorted already
            return cls.sorted_from("", names, hashes.flat, hashes.owners())
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(order), np.int32)  # each file's number among the files sorted
        rank[order] = np.arange(len(order), dtype=np.int32)
        return cls.sorted_from("", tuple(names[number] for number in order), hashes.flat, np.repeat(rank, hashes.sizes))

    @classmethod
    def sorted_from(cls, name: str, files: tuple[str, ...], hashes: np.ndarray, owners: np.ndarray) -> Segment:
        if len(hashes) > 1 and not bool(np.all(hashes[1:] >= hashes[:-1])):  # one segment merged alone is sorted
            order = np.argsort(hashes)  # equal hashes in any order: numpy's default sort is 2.3x its stable one here
            hashes, owners = hashes[order], owners[order]
        return cls(name, files, len(hashes), hashes[::ROWS_PER_GROUP], (hashes, owners))

    @property
    def filter_name(self) -> str:
        return filter_name(self.name)

    def near(self, output: Location, candidates: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, their files' numbers) of the rows that may equal one of ``candidates`` (sorted, unique): the
        row groups holding a candidate its filter (``words``) lets through (a segment held whole: all its rows)."""
        if self.loaded is not None:
            return self.loaded
        empty = np.empty(0, np.uint64), np.empty(0, np.int32)
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
                raise _unreadable(output.uri_of(path), f"its filter has {size} bytes for {self.rows} ids")
            words = np.empty(size // 8, "<u8")
            view, done = memoryview(words).cast("B"), 0
            while done < size:
                got = f.readinto(view[done:])
                if got == 0:
                    raise _unreadable(output.uri_of(path), f"its filter ended at {done} of {size} bytes")
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
        """Write this segment (``loaded``) as ``name``, its filter and files first; ``segments``: the index's, itself
        last."""
        hashes, owners = self.loaded
        with storage_errors(output.uri), output.writer(output.join(filter_name(name))) as out:
            out.write(bloom.build(hashes).astype("<u8", copy=False).tobytes())
        _write_parquet(output, files_name(name), pa.table({"file": pa.array(self.files, pa.string())}),
                       compression="zstd", use_dictionary=False)  # sorted names: zstd takes most of their shared prefixes
        record = {"starts": [int(h) for h in self.starts], "segments": segments, "file_count": len(self.files)}
        table = pa.table({"hash": pa.array(hashes, pa.uint64()), "file": pa.array(owners, pa.int32())},
                         metadata={INDEX_HASH_KEY: str(ID_HASH_VERSION), SEGMENT_KEY: json.dumps(record)})
        # Hashes are random 64-bit words: no dictionary or codec makes them smaller, and trying costs most of the write
        # (20,000,000 ids: 1.3 s with Parquet's defaults, 0.28 s without). Row groups are found by ``starts``.
        _write_parquet(output, name, table, row_group_size=ROWS_PER_GROUP, use_dictionary=False, compression="none",
                       write_statistics=False)


def read_segment(output: Location, name: str) -> tuple[Segment, int, list[str]]:
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
            raise _unreadable(output.uri_of(path), str(e).splitlines()[0]) from e
    version = int(metadata.get(INDEX_HASH_KEY.encode(), b"1"))
    if legacy:
        cells = table.column("hashes").combine_chunks()
        files = table.column("input_file").to_pylist()
        hashes = cells.values.to_numpy() if len(cells.values) else np.empty(0, np.uint64)
        offsets = cells.offsets.to_numpy()
        owners = np.repeat(np.arange(len(files), dtype=np.int32), np.diff(offsets))
        return Segment.sorted_from(name, tuple(files), hashes.astype(np.uint64, copy=False), owners), version, [name]
    if SEGMENT_KEY.encode() not in metadata:
        raise _unreadable(output.uri_of(path), "a Parquet file, not an index segment")
    record = json.loads(metadata[SEGMENT_KEY.encode()])
    # Segments written before the files had a file of their own list them in this record.
    files = tuple(record["files"]) if "files" in record else _read_files(output, name, record["file_count"])
    segment = Segment(name, files, rows, np.array(record["starts"], np.uint64))
    return segment, version, list(record["segments"])


def filter_name(segment: str) -> str:
    """The name of a segment's filter, beside it."""
    return segment.removesuffix(INDEX_SUFFIX) + FILTER_SUFFIX


def _unreadable(uri: str, why: str) -> JobError:
    """The one-line refusal of an index file that cannot be read: the table cannot vouch for its parts without it."""
    return JobError(f"{uri}: the table's id index cannot be read ({why}); pass --overwrite to redo the table")


def files_name(segment: str) -> str:
    """The name of the file listing a segment's input files, beside it."""
    return segment.removesuffix(INDEX_SUFFIX) + FILES_SUFFIX


def _read_files(output: Location, segment: str, count: int) -> tuple[str, ...]:
    """A segment's input files, from the file beside it; a one-line JobError when it is gone or not as many."""
    path = output.join(files_name(segment))
    with storage_errors(output.uri_of(path)):
        try:
            with output.filesystem.open_input_file(path) as f:
                files = pq.ParquetFile(f).read(columns=["file"]).column("file").to_pylist()
        except (pa.ArrowException, OSError, KeyError) as e:  # gone, cut short, or not a list of files
            raise _unreadable(output.uri_of(path), str(e).splitlines()[0]) from e
    if len(files) != count:
        raise _unreadable(output.uri_of(path), f"it lists {len(files)} files where its segment has {count}")
    return tuple(files)


def _write_parquet(output: Location, name: str, table: pa.Table, **options) -> None:
    """``table`` as Parquet at ``name`` under the output, written to the store as it is encoded: not first into a
    buffer as large as the file (a segment of 4,000,000 ids: 48 MB, grown by doubling). A write cut short leaves a
    file that no manifest names, which no reader opens and the next run's tidy deletes."""
    with storage_errors(output.uri), output.writer(output.join(name)) as out:
        pq.write_table(table, out, **options)


def _column(table: pa.Table, name: str, dtype: type) -> np.ndarray:
    column = table.column(name)
    return column.to_numpy() if column.num_chunks else np.empty(0, dtype)
