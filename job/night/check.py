"""The final check before a manifest: every part whole, holding its input file's ids, and no id twice in the table.

``verify`` runs once on the driver after the engine committed its parts. It reads the parts this
run made (or, for a full run, every part: one whole GET each, the ``id`` and ``error`` columns,
about 100 bytes a row), and holds each to its input file: as many rows, and the same ids (their
digest, ``job.input.unique_ids.ids_digest``, against the one the id check read from the input; not
known with ``--skip-id-check`` or positional ids). Parts an incremental run kept unread come
with their rows from the table's snapshot (``job.night.record``). Ids are then held unique across
the table by their 64-bit hashes: the parts read among themselves, and against the parts kept
unread through the table's ids index (``job.ids.index``: which of these hashes they hold,
read where asked; the kept parts were held unique among themselves by the runs that wrote them).
A repeated hash is confirmed by value in the parts that hold it, so the ``DataError`` (exit 3) names
a real id, its parts and rows, and a collision never fails a run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from itertools import islice

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from job.input.dataset_check import FOOTER_READ_THREADS
from job.errors import DataError
from job.ids.hashing import FILES_HASHED_TOGETHER, as_input_ids, hashed_together, ids_digest, part_hashes, repeated
from job.night.manifest import Counts
from job.night.memory import release_freed_memory
from job.output.rows import transient_errors
from job.input.plan import InputFile
from job.night.held import list_parts
from job.ids.hashes_by_file import HashesByFile
from job.input.unique_ids import repeat_line
from job.night.formats import gone_before_commit
from storage import Location, StorageError, storage_errors
from storage.parallel import map_in_order

ERROR_EXAMPLES = 3  # error rows quoted in the manifest and the summary
# Every this many groups of parts read, the memory their reads freed is given back (job.night.memory): about 16,000 parts.
RELEASE_EVERY_GROUPS = 256
NO_MANIFEST = "no manifest was written"


@dataclass(frozen=True, slots=True)  # one per part: no __dict__ each
class PartFacts:
    rows: int
    errored: int
    size: int | None = None  # the part's bytes (None: kept unread, its size from the snapshot)
    transient: int = 0  # its error rows of a transient cause (job.output.rows.TIMED_OUT): redone by the next night


# Hashes -> {part kept unread: those of the hashes it holds}, only parts holding one (job.ids.index.IdIndex.held).
KeptHolding = Callable[[np.ndarray], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Verified:
    counts: Counts
    examples: list[dict]  # a few error rows of the parts read
    facts: dict[str, PartFacts]  # every part of the table, by name
    # The parts read, by name: their ids' hashes (job.input.unique_ids.id_hashes), hashed as the input's ids are; the
    # ids index's next segment. Parts kept unread have theirs in the index.
    hashes: HashesByFile


def verify(location: Location, table: Mapping[str, InputFile], read: Mapping[str, InputFile], kept: Mapping[str, PartFacts],
           ids_as_text: bool, leaving: Collection[str] = (), kept_holding: KeptHolding | None = None,
           exact: bool = True) -> Verified:
    """Hold the table's parts (``table``: part name -> input file) to their input, then to each other.

    ``read``: the parts to read and check; ``kept``: the facts of the others, from the snapshot;
    ``kept_holding``: which of some hashes the kept parts hold (needed when ``kept`` is not empty);
    ``leaving``: parts of input files gone, deleted once the manifest is written.
    ``exact``: the prefix must hold the table's parts and no other (the plain folder, which is the table); a Delta
    or Iceberg table's log says what it holds, and other writers compact and vacuum parts: only those read must be there.
    Raises RuntimeError (no manifest is written) naming what is wrong.
    """
    if exact:
        _require_exactly(location, table, leaving)
    names = iter(read)
    groups = iter(lambda: {name: read[name] for name in islice(names, FILES_HASHED_TOGETHER)}, {})  # made as read
    facts: dict[str, PartFacts] = {}
    hashed: list[HashesByFile] = []
    examples: list[dict] = []
    checked = map_in_order(lambda group: _check_parts(location, group, ids_as_text), groups,
                           threads=min(FOOTER_READ_THREADS, -(-len(read) // FILES_HASHED_TOGETHER)))
    for number, (group_facts, group_hashes, group_examples) in enumerate(checked, start=1):
        facts |= group_facts
        hashed.append(group_hashes)
        examples += group_examples[:ERROR_EXAMPLES - len(examples)]
        if number % RELEASE_EVERY_GROUPS == 0:
            release_freed_memory()  # what the reads freed, kept by each thread's allocator: a million parts, a GB
    hashes = HashesByFile.concatenated(hashed)
    del hashed  # the groups' arrays, copied into one
    require_unique(location, hashes, ids_as_text, kept_holding if kept else None)
    facts = {**kept, **facts} if kept else facts
    rows_out, errored = sum(f.rows for f in facts.values()), sum(f.errored for f in facts.values())
    counts = Counts(rows_in=sum(f.rows for f in table.values()), rows_out=rows_out, predicted=rows_out - errored, errored=errored)
    return Verified(counts, examples, facts, hashes)


def _check_parts(location: Location, files: Mapping[str, InputFile],
                 ids_as_text: bool) -> tuple[dict[str, PartFacts], HashesByFile, list[dict]]:
    """Read and hold a few parts (``files``: part name -> its input file) to their inputs, on one thread: their facts,
    their ids' hashes and their first error rows. Their ids are hashed in one call: a part of a few rows costs numpy's
    fixed cost of a call more than its hashing (``unique_ids.hashed_together``)."""
    read = {name: _read_part(location, name, file) for name, file in files.items()}
    tables = {name: table for name, (table, _) in read.items()}
    hashed = [hashes for hashes, _ in
              hashed_together([as_input_ids(t.column("id"), ids_as_text) for t in tables.values()], ids_as_text)]
    facts = {name: _facts_of(name, files[name], t, hashes, read[name][1]) for (name, t), hashes in zip(tables.items(), hashed)}
    return facts, HashesByFile.joined(list(tables), hashed), _error_examples(tables.values())


def _require_exactly(location: Location, table: Mapping[str, InputFile], leaving: Collection[str]) -> None:
    present = set(list_parts(location)) - set(leaving)
    missing = [f.path for name, f in table.items() if name not in present]
    if missing:
        raise RuntimeError(f"{len(missing)} of {len(table)} input files have no committed part (e.g. {missing[0]}); "
                           f"{NO_MANIFEST}: re-run with --resume")
    stale = sorted(present - set(table))
    if stale:
        raise RuntimeError(f"{location.uri} holds {len(stale)} parts of no planned input file (e.g. {stale[0]}); {NO_MANIFEST}")


def read_part_columns(location: Location, name: str, columns: list[str]) -> pa.Table:
    """``columns`` of the committed part ``name``: one whole GET (a part is about 100 bytes a row, so not a footer
    read plus a ranged read per column), decoded by one ``ParquetFile`` on this thread.

    Not ``pq.read_table``: it builds a dataset for each call, 0.5 ms for a part of a few rows where this takes
    0.05 (``python -m benchmarks.finish_bench``: the final check is one such read per part the run wrote).
    """
    return _decode(read_part_bytes(location, name), columns)


def read_part_bytes(location: Location, name: str) -> pa.Buffer:
    """The committed part ``name``, whole."""
    path = location.join(name)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        return f.read_buffer()


def _decode(data: pa.Buffer, columns: list[str]) -> pa.Table:
    """``columns`` of a part's bytes, decoded on this thread."""
    return pq.ParquetFile(pa.BufferReader(data)).read(columns=columns, use_threads=False)


def _read_part(location: Location, name: str, file: InputFile) -> tuple[pa.Table, int]:
    """The part's id and error columns, and its size; a part gone since the run wrote it is named as such."""
    try:
        data = read_part_bytes(location, name)
    except StorageError as e:
        if isinstance(e.__cause__, FileNotFoundError):
            raise gone_before_commit(location.uri, 1, name) from e
        raise
    table = _decode(data, ["id", "error"])
    if table.num_rows != file.rows:
        raise RuntimeError(f"{name} has {table.num_rows} rows for the {file.rows} rows of {file.path}; {NO_MANIFEST}")
    return table, data.size


def _facts_of(name: str, file: InputFile, table: pa.Table, hashes: np.ndarray, size: int) -> PartFacts:
    if file.ids_digest is not None and ids_digest(hashes) != file.ids_digest:
        raise DataError(f"{name} holds other ids than its input file {file.path}: the file changed while the job ran; "
                        f"{NO_MANIFEST}: run again with --resume, which redoes the files that changed")
    errors = table.column("error")
    return PartFacts(table.num_rows, table.num_rows - errors.null_count, size, transient_errors(errors))


def require_unique(location: Location, hashes: HashesByFile, ids_as_text: bool,
                   kept_holding: KeptHolding | None = None) -> None:
    """Refuse an id held twice in the table of these parts (``hashes``: their ids', by part name) and the parts kept
    unread (``kept_holding``: which of some hashes they hold): hashes first, then the ids themselves in the parts that
    hold a repeat."""
    repeats = repeated(hashes.flat)[0]  # a sorted copy: the parts' hashes stay in their order
    held = dict(kept_holding(hashes.flat)) if kept_holding is not None and len(hashes) else {}
    if held:
        repeats = np.union1d(repeats, np.concatenate(list(held.values())))
    if len(repeats) == 0:
        return
    places: dict[str, list[tuple[str, int]]] = {}
    read = set(hashes.names) if held else set()
    holding = np.unique(hashes.owners()[np.isin(hashes.flat, repeats)]).tolist()
    # The table's parts before the run's: a repeat names the part that held the id first.
    holders = [name for name in held if name not in read] + [hashes.names[number] for number in holding]
    for name in holders:
        for row, value in ids_hashed_to(location, name, repeats, ids_as_text):
            places.setdefault(value, []).append((name, row))
    twice = {value: where for value, where in places.items() if len(where) > 1}
    if twice:
        raise DataError(_repeated(location, twice))


def _repeated(location: Location, twice: Mapping[str, list[tuple[str, int]]]) -> str:
    value, places = next(iter(twice.items()))
    where = [f"{location.uri_of(location.join(name))} row {row}" for name, row in places]
    extra = sum(len(p) - 1 for p in twice.values())
    return (f"output repeats ids: {repeat_line(value, where, len(twice), extra)}, as the input does (--skip-id-check "
            "skipped the check that refuses this before any work); no manifest was written: make the input's ids unique, "
            "then run again with --resume, which redoes the files that changed")


def ids_hashed_to(location: Location, name: str, wanted: np.ndarray, ids_as_text: bool) -> list[tuple[int, str]]:
    """(row, id) of a committed part's ids whose hash is in ``wanted``: repeated hashes confirmed by value.

    One whole GET of the part's id column.
    """
    ids = read_part_columns(location, name, ["id"]).column("id").combine_chunks()
    rows = np.flatnonzero(np.isin(part_hashes(ids, ids_as_text), wanted))
    return list(zip(rows.tolist(), ids.take(pa.array(rows)).to_pylist()))


def _error_examples(tables) -> list[dict]:
    examples: list[dict] = []
    for table in tables:
        examples += table.filter(pc.is_valid(table.column("error"))).slice(0, ERROR_EXAMPLES - len(examples)).to_pylist()
        if len(examples) >= ERROR_EXAMPLES:
            break
    return examples
