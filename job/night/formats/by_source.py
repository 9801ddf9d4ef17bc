"""Which data files of a shared table hold rows leaving it, wherever other writers moved them.

A night takes a replaced or deleted input file's rows out of the table by their lineage (the
``source_file`` column, ``job.output.rows.SOURCE``), not by file name: the platform's OPTIMIZE
merges our parts into files of its own, a DELETE rewrites them, another job appends its own.
``Leaving`` says which rows go: those of input files by name, and for image objects (whose rows
carry each object's key) the key range of each group of objects that leaves. For each data file of
the table's current version ``split`` tells whether it holds only leaving rows (removed whole),
some (rewritten without them: ``rewrite_without``), or none (left alone). A file is read only when
neither our own records (a part of ours holds one input file or group) nor the format's statistics
(the column's min and max, which the formats keep as bounds) can tell; ``sources_within`` reads
which keys of some ranges the table still holds (a privacy DELETE by key).

Every table file is read here, through ``read_columns``, in the plain types of what it holds
(``job.output.rows.plain_types``): other writers hand our columns back as ``string_view`` or
``large_string``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.output.rows import SOURCE, plain_types
from storage import Location, storage_errors
from storage.parallel import map_in_order

READ_THREADS = 16
REWRITTEN_PREFIX = "rewritten-"  # a file a night wrote in place of one that mixed leaving rows with others


KeyRange = tuple[str, "str | None"]  # [low, high) of source_file values; high None: no upper bound


@dataclass(frozen=True)
class Leaving:
    """The rows leaving the table, by their ``source_file``: what a night's commit takes out."""

    # Input units (relative to --input) whose rows leave: Parquet files by name, and object groups by theirs (which a
    # group's rows carried before each object's key did).
    units: frozenset[str] = frozenset()
    ranges: tuple[KeyRange, ...] = ()  # the key range each leaving object group held (job.input.objects.key_ranges)

    def __bool__(self) -> bool:
        return bool(self.units or self.ranges)

    def holds(self, source: str | None) -> bool:
        """Whether a row of ``source`` leaves (a row without a source never does)."""
        if source is None:
            return False
        return source in self.units or any(low <= source and (high is None or source < high) for low, high in self.ranges)

    def may_be_within(self, low: str, high: str) -> bool:
        """Whether a file whose sources lie within [low, high] may hold a leaving row."""
        if any(low <= unit <= high for unit in self.units):
            return True
        return any(start <= high and (end is None or end > low) for start, end in self.ranges)

    def mask(self, sources: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        """True where a row of ``sources`` leaves (null: never)."""
        leaving = pc.is_in(sources, pa.array(sorted(self.units), pa.string()))
        for low, high in self.ranges:
            within = pc.greater_equal(sources, low)
            if high is not None:
                within = pc.and_(within, pc.less(sources, high))
            leaving = pc.or_(leaving, within)
        return pc.fill_null(leaving, False)


@dataclass(frozen=True)
class DataFile:
    """One data file of the table's current version, as its log lists it."""

    path: str  # relative to the table's root
    low: str | None = None  # the min of its source_file column, where the log keeps statistics
    high: str | None = None  # the max

    def may_hold(self, leaving: Leaving) -> bool:
        """Whether the statistics leave room for a leaving source (no statistics: they do)."""
        if self.low is None or self.high is None:
            return True
        return leaving.may_be_within(self.low, self.high)


@dataclass(frozen=True)
class Split:
    whole: tuple[str, ...]  # files whose every row leaves: removed
    mixed: tuple[str, ...]  # files holding leaving rows and others: rewritten without the leaving ones


def split(files: Sequence[DataFile], known: Mapping[str, str], leaving: Leaving,
          read_sources: Callable[[str], set[str | None]], keep: Collection[str] = ()) -> Split:
    """Sort the table's ``files`` by the leaving rows they hold; ``known``: our parts' one input unit each; ``keep``:
    the parts of the table after the night, never taken out (a part a night adopted that its log names already)."""
    whole, unsure = [], []
    for file in files:
        if file.path in keep:
            continue
        if file.path in known:
            if known[file.path] in leaving.units:
                whole.append(file.path)
        elif leaving and file.may_hold(leaving):
            unsure.append(file.path)
    mixed = []
    for path, sources in zip(unsure, map_in_order(read_sources, unsure, threads=min(READ_THREADS, max(1, len(unsure))))):
        held = {source for source in sources if leaving.holds(source)}
        if held:
            (whole if held == sources else mixed).append(path)
    return Split(tuple(whole), tuple(mixed))


def read_columns(output: Location, path: str, columns: Sequence[str] | None = None) -> pa.Table | None:
    """``columns`` (None: all) of a table's data file, in their plain types; None when it lacks one of them."""
    where = output.join(path)
    with storage_errors(output.uri_of(where)), output.filesystem.open_input_file(where) as f:
        parquet = pq.ParquetFile(f)
        if columns is not None and not set(columns) <= set(parquet.schema_arrow.names):
            return None
        return plain_types(parquet.read(columns=None if columns is None else list(columns)))


def sources_of(output: Location, path: str) -> set[str | None]:
    """The distinct source_file values of a data file (a file without the column: {None}, never leaving)."""
    table = read_columns(output, path, [SOURCE])
    return {None} if table is None else set(pc.unique(table.column(SOURCE)).to_pylist())


def source_counts(output: Location, path: str) -> dict[str | None, int]:
    """How many rows of a data file each source_file value has (a file without the column: all under None)."""
    table = read_columns(output, path, [SOURCE])
    if table is None:
        return {None: pq.ParquetFile(output.filesystem.open_input_file(output.join(path))).metadata.num_rows}
    counted = pc.value_counts(table.column(SOURCE).combine_chunks())
    return dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))


def rows_within(output: Location, files: Sequence[DataFile], units: Mapping[str, Leaving]) -> dict[str, int]:
    """The rows the table's ``files`` hold of each unit (``units``: name -> the rows it names), read where the log's
    statistics leave room for them."""
    every = Leaving(frozenset().union(*(u.units for u in units.values())), tuple(r for u in units.values() for r in u.ranges))
    wanted = [file.path for file in files if every and file.may_hold(every)]
    found = dict.fromkeys(units, 0)
    for counts in map_in_order(lambda path: source_counts(output, path), wanted, threads=min(READ_THREADS, max(1, len(wanted)))):
        for source, count in counts.items():
            for name, unit in units.items():
                if unit.holds(source):
                    found[name] += count
    return found


def sources_within(output: Location, files: Sequence[DataFile], ranges: Sequence[KeyRange]) -> set[str]:
    """The source_file values in ``ranges`` that the table's ``files`` hold: the object keys it still has rows of."""
    within = Leaving(ranges=tuple(ranges))
    wanted = [file.path for file in files if within and file.may_hold(within)]
    found: set[str] = set()
    for sources in map_in_order(lambda path: sources_of(output, path), wanted, threads=min(READ_THREADS, max(1, len(wanted)))):
        found |= {source for source in sources if within.holds(source)}
    return found


def ids_within(output: Location, files: Sequence[DataFile], units: Mapping[str, Leaving]) -> dict[str, set[str]]:
    """The ids the table's ``files`` hold rows of, for each unit (``units``: name -> the rows it names), read where the
    log's statistics leave room for them."""
    every = Leaving(frozenset().union(*(u.units for u in units.values())), tuple(r for u in units.values() for r in u.ranges))
    wanted = [file.path for file in files if every and file.may_hold(every)]
    found: dict[str, set[str]] = {name: set() for name in units}
    for table in map_in_order(lambda path: read_columns(output, path, [SOURCE, "id"]), wanted,
                              threads=min(READ_THREADS, max(1, len(wanted)))):
        if table is None:
            continue
        for name, unit in units.items():
            found[name] |= set(table.column("id").filter(unit.mask(table.column(SOURCE))).to_pylist())
    return found


def rewrite_without(output: Location, path: str, leaving: Leaving, run_id: str, schema: pa.Schema) -> tuple[str, int]:
    """Write the rows of ``path`` that do not leave as a new file beside it, in the table's ``schema`` (the parts'
    types and field ids, whatever types its writer used); (its name, its rows)."""
    table = read_columns(output, path)
    return write_rewritten(output, table.filter(pc.invert(leaving.mask(table.column(SOURCE)))), run_id, schema)


def write_rewritten(output: Location, staying: pa.Table, run_id: str, schema: pa.Schema) -> tuple[str, int]:
    """Write ``staying`` (a data file's rows less some) as a new file of ours in the table's ``schema``; (name, rows)."""
    name = f"{REWRITTEN_PREFIX}{run_id}-{uuid.uuid4().hex}.parquet"
    if staying.schema.names == schema.names:
        staying = staying.cast(schema)
    with storage_errors(output.uri_of(output.join(name))):
        pq.write_table(staying, output.join(name), filesystem=output.filesystem)
    return name, staying.num_rows


def discard(output: Location, names: Sequence[str]) -> None:
    """Data files this job wrote for a commit that did not land: no version names them."""
    with storage_errors(output.uri):
        for name in names:
            try:
                output.filesystem.delete_file(output.join(name))
            except FileNotFoundError:
                pass


def missing(output: Location, names: Sequence[str]) -> list[str]:
    """Of the files ``names`` (relative to the prefix), those not on storage, sorted."""
    if not names:
        return []
    with storage_errors(output.uri):
        infos = output.filesystem.get_file_info([output.join(name) for name in names])
    return sorted(name for name, info in zip(names, infos) if info.type == pafs.FileType.NotFound)
