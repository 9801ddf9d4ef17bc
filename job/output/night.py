"""What a run does to its output, decided once: keep, adopt, run, remove.

The driver calls ``decide_night`` once, before any work, with what it read: the planned input
files (by their part's name), what the output prefix really holds (``Held``: its parts, and the
finished manifest with the table's last snapshot) and a reader of part footers. A first run,
``--resume``, ``--incremental`` and ``--overwrite`` are inputs to this one function, not branches
spread over the driver; everything after it reads the ``Night`` it returns. It writes nothing, and
reads only the footers it asks ``read_footers`` for, so each case is a unit test.

The rules, whatever the engine:
- ``--overwrite``: every planned file runs. A plain folder is cleared of everything of ours first;
  a Delta or Iceberg table is not: its next version replaces every row (``overwrite``), so its
  readers see the old table or the new one, never none.
- Nothing of ours under the prefix: every planned file runs.
- A finished table (``_SUCCESS.json``) and no flag: refused, naming the three flags.
- ``--incremental`` on a finished table: an input file unchanged since the snapshot keeps its
  part unread, while that part is there; a part the snapshot does not vouch for (a stopped night
  wrote it, or its file changed) is adopted when its footer proves it holds every row of the file
  as listed now; every other planned file runs, a part gone missing included; parts of input files
  no longer listed are removed (``--keep-removed``: kept while their file is gone).
- ``--resume`` on a finished table: a whole table (every part it lists there, none it does not
  know) has nothing to do, so a scheduler's retry of a finished job is a no-op; a table that is
  not whole (a night stopped before its manifest, a part deleted) is finished as ``--incremental``
  finishes it.
- Parts and no manifest (a first run was stopped): refused unless ``--resume`` or
  ``--incremental``, which adopt the parts their footers prove and run the other files; a part of
  no planned file is refused by ``--resume`` (the input changed) and removed by ``--incremental``.

A Delta or Iceberg table is shared (``shared``): its log, not our listing, says where rows are.
Other writers compact our parts into files of theirs, vacuum them, delete rows: an input file the
snapshot holds at this version keeps its rows wherever they now lie, part file or not; a replaced
or gone input file's rows leave by their lineage (``leaving``, committed by ``job.output.commit``);
the only parts a night deletes are its own that no version ever named (a stopped night's).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity, Listing, unchanged
from job.input.dataset_check import InputColumns
from job.input.plan import InputFile
from job.manifest import MANIFEST, Manifest
from job.input.objects import is_group_name, key_ranges
from job.output.formats import FOLDERS
from job.output.formats.by_source import Leaving
from job.output.table import Snapshot, TableFile

Footer = tuple[int, "dict | None"]  # a committed part's rows and footer record (job.output.parts.read_part_record)
UNREADABLE: Footer = (-1, None)  # a part whose footer cannot be read: cut short or damaged
FooterReader = Callable[[Sequence[str]], Mapping[str, Footer]]  # part names -> their footers, read together
# (--keep-removed) the input files gone, by their table entry, and the parts this run writes -> the gone
# files whose every id is in those parts' input files: moved (renamed), not removed.
MovedIds = Callable[[Mapping[str, TableFile], Sequence[str]], set[str]]


@dataclass(frozen=True)
class Held:
    """What the output prefix holds, read once before the night is decided (``job.output.prefix.read_held``)."""

    uri: str  # the output prefix, for messages
    files: tuple[str, ...] = ()  # every file of ours under it (relative names), this run's lease aside
    parts: frozenset[str] = frozenset()  # the committed parts directly under it
    finished: Manifest | None = None  # its manifest, when a run finished there (read for --resume and --incremental)
    snapshot: Snapshot | None = None  # the table that manifest records (None: none, or an older version's manifest)
    sizes: Mapping[str, int] = field(default_factory=dict)  # the committed parts' sizes, as listed


@dataclass(frozen=True)
class Night:
    """What this run does to the output; the driver and ``job.finish`` read it, never recompute it."""

    previous: Manifest | None = None  # the finished run whose table this run continues, or finds whole
    snapshot: Snapshot | None = None  # that run's table, parsed once
    # The committed parts this run keeps, by name; their input files are not run again. The value is
    # the part's footer record (adopted: its footer proved it), or None (the snapshot vouches for it).
    kept: Mapping[str, dict | None] = field(default_factory=dict)
    removed: tuple[str, ...] = ()  # parts of input files no longer planned: deleted once the manifest is written
    kept_removed: Mapping[str, TableFile] = field(default_factory=dict)  # --keep-removed: gone file -> its kept entry
    clear: bool = False  # --overwrite: everything of ours is deleted before any work
    done: bool = False  # --resume on a whole finished table: its manifest is the answer
    notes: tuple[str, ...] = ()  # what the user should hear about the decision (a part redone, and why)
    # A shared table: the rows of the input files (relative to --input) replaced or gone, which leave it by their
    # lineage: by the file's name, or by the keys of an object group (job.output.formats.by_source.Leaving).
    leaving: Leaving = field(default_factory=Leaving)
    overwrite: bool = False  # a shared table's --overwrite: its next version replaces every row

    def pending(self, planned: Mapping[str, InputFile]) -> list[str]:
        """The planned parts this run writes (in plan order): every one not kept."""
        return [] if self.done else [name for name in planned if name not in self.kept]

    @property
    def adopted(self) -> list[str]:
        """Kept parts the snapshot did not vouch for: this run's manifest is the first to list them."""
        return [name for name, record in self.kept.items() if record is not None]

    @property
    def changes_table(self) -> bool:
        """Whether the run changes the table beyond running files: a part adopted or removed, a file newly gone but kept."""
        newly_gone = any(not entry.removed for entry in self.kept_removed.values())
        return bool(self.adopted or self.removed or self.leaving or newly_gone)


@dataclass(frozen=True)
class Vouched:
    """What the table's last snapshot vouches for in tonight's listing, before any footer is read."""

    files: Mapping[str, InputFile] | None = None  # listed files unchanged since the snapshot (by path): kept unread
    columns: InputColumns | None = None  # the columns the table was made from: new files must have them


def vouched_input(config: JobConfig, held: Held, listing: Listing, input_root: str) -> Vouched:
    """The listed input files the table's snapshot vouches for (--resume, --incremental), and its columns.

    Refuses first (one line) an output that holds another table format than ``--table-format``: by its
    format's folder, or its manifest's record (``--overwrite`` replaces it, so is not refused).
    """
    if not config.overwrite:
        recorded = held.finished.config.get("table_format", "parquet") if held.finished is not None else None
        found = next((name for name, folder in FOLDERS.items() if any(f.startswith(folder + "/") for f in held.files)), None)
        found = found or recorded
        if found is not None and found != config.table_format:
            raise JobError(f"{held.uri} holds a {found} table and --table-format is {config.table_format}; pass "
                           f"--table-format {found}, or --overwrite to replace it, or choose another --output")
    snapshot = held.snapshot if config.incremental or config.resume else None
    if snapshot is None:
        return Vouched()
    files = {}
    for name, entry in snapshot.files.items():
        path = posixpath.join(input_root, name)
        if not entry.removed and path in listing and unchanged(entry.identity, listing[path]):
            files[path] = InputFile(path, entry.rows, entry.identity)
    record = snapshot.columns
    return Vouched(files, InputColumns(record["id_column"], record["shape_columns"], record["ids_as_text"]))


def decide_night(config: JobConfig, planned: Mapping[str, InputFile], held: Held, read_footers: FooterReader,
                 moved: MovedIds = lambda gone, pending: set(), sources: Callable[[], Collection[str]] = frozenset) -> Night:
    """The one decision of what the run does to its output (see the module docstring); JobError for what it refuses.

    ``moved``: with --keep-removed, which input files gone reappear whole under another name (a
    renamed file): their parts are removed, not kept, or the table would hold their ids twice.
    ``sources``: the planned input files' paths relative to --input (asked only when --resume finds parts of no
    planned name: earlier versions of planned files are replaced, parts of other files refused).
    """
    shared = config.table_format != "parquet"
    if config.overwrite:
        if shared and held.snapshot is not None:
            strays = tuple(sorted(held.parts - {entry.part for entry in held.snapshot.files.values()}))
            return Night(snapshot=held.snapshot, removed=strays, overwrite=True)
        return Night(clear=bool(held.files))
    if not held.files:
        return Night()
    if MANIFEST in held.files:
        return _on_finished(config, planned, held, read_footers, moved)
    return _on_partial(config, planned, held, read_footers, sources)


def _on_finished(config: JobConfig, planned: Mapping[str, InputFile], held: Held, read_footers: FooterReader,
                 moved: MovedIds) -> Night:
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} already holds a finished job ({MANIFEST}); pass --incremental to run what the "
                       "input gained since, --overwrite to redo it all, or choose another --output")
    snapshot, shared = held.snapshot, config.table_format != "parquet"
    if not config.incremental and (snapshot is None or _whole(snapshot, held, shared)):
        return Night(previous=held.finished, snapshot=snapshot, done=True)
    if snapshot is None:
        raise JobError(f"{_uri_of(held, MANIFEST)} was written by an older version, without the table's snapshot "
                       "--incremental needs; run once with --overwrite to redo the table, then --incremental")
    by_part = {entry.part: entry for entry in snapshot.files.values()}
    # A shared table's log says where the rows are: a part compacted away by another writer still holds its file.
    vouched = {name: None for name, file in planned.items() if name in by_part and unchanged(by_part[name].identity, file.identity)
               and (shared or _as_written(by_part[name], held))}
    kept, notes = _proven(planned, read_footers([n for n in sorted(held.parts) if n in planned and n not in vouched]))
    gone = {entry.part: name for name, entry in snapshot.files.items() if entry.part not in planned}
    kept_removed = {gone[part]: by_part[part] for part in sorted(gone) if shared or part in held.parts} if config.keep_removed else {}
    if kept_removed:
        running = [name for name in planned if name not in vouched and name not in kept]
        kept_removed = {name: e for name, e in kept_removed.items()
                        if name not in moved({name: e for name, e in kept_removed.items()}, running)}
    staying = {e.part for e in kept_removed.values()}
    removed = tuple(n for n in sorted(held.parts) if n not in planned and n not in staying and not (shared and n in by_part))
    leaving = _leaving(frozenset(name for part, name in gone.items() if part not in staying), snapshot) if shared else Leaving()
    return Night(held.finished, snapshot, {**vouched, **kept}, removed, kept_removed, leaving=leaving, notes=notes)


def _leaving(units: frozenset[str], snapshot: Snapshot) -> Leaving:
    """The rows of the input ``units`` leaving a shared table: an input file's by its name, an object group's by the
    range of keys it held (its rows carry their objects' keys), and by its name (as rows written before did)."""
    if not units or not all(is_group_name(name) for name in snapshot.files):
        return Leaving(units)
    ranges = key_ranges(snapshot.files)
    return Leaving(units, tuple(ranges[name] for name in sorted(units)))


def _on_partial(config: JobConfig, planned: Mapping[str, InputFile], held: Held, read_footers: FooterReader,
                sources: Callable[[], Collection[str]]) -> Night:
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} holds a partial output of an earlier run ({len(held.parts)} committed parts, no "
                       f"{MANIFEST}); pass --resume to finish it or --overwrite to start over")
    stray = sorted(n for n in held.parts if n not in planned)
    if stray and not config.incremental:
        _require_earlier_versions(held, stray, sources(), read_footers)
    kept, notes = _proven(planned, read_footers([n for n in sorted(held.parts) if n in planned]))
    return Night(kept=kept, removed=tuple(stray), notes=notes)


def _require_earlier_versions(held: Held, stray: Sequence[str], sources: Collection[str], read_footers: FooterReader) -> None:
    """--resume: parts of no planned part name must be earlier versions of planned input files (``sources``: their paths
    relative to --input; each version of a file gets a part of its own), which the run replaces; a part of an input
    file no longer planned is refused."""
    foreign = [name for name, (_, record) in read_footers(stray).items() if (record or {}).get("input_file") not in sources]
    if foreign:
        raise JobError(f"{_uri_of(held, foreign[0])} belongs to no input file of this plan (the input changed, or "
                       "--input/--limit differ from the first run); pass --overwrite to start over")


def _uri_of(held: Held, name: str) -> str:
    return f"{held.uri.rstrip('/')}/{name}"


def _as_written(entry: TableFile, held: Held) -> bool:
    """Whether the plain folder holds ``entry``'s part at the size it was written (a size not recorded: as listed)."""
    return entry.part in held.parts and (entry.size is None or held.sizes.get(entry.part) == entry.size)


def _whole(snapshot: Snapshot, held: Held, shared: bool) -> bool:
    """Whether the prefix holds exactly the parts the snapshot lists, as written (a shared table: no part it does not
    list, as other writers may have compacted and vacuumed the ones it lists)."""
    listed = {entry.part for entry in snapshot.files.values()}
    if shared:
        return held.parts <= listed
    return held.parts == listed and all(_as_written(entry, held) for entry in snapshot.files.values())


def _proven(planned: Mapping[str, InputFile], footers: Mapping[str, Footer]) -> tuple[dict[str, dict | None], tuple[str, ...]]:
    """The parts whose footers prove they hold every planned row of the listed version of their input file.

    The others are run again (their part replaced), each with a note saying why.
    """
    kept, notes = {}, []
    for name, (rows, record) in footers.items():
        file, recorded = planned[name], (record or {}).get("identity")
        if (rows, record) == UNREADABLE:
            notes.append(f"{name}: the part cannot be read (cut short or damaged): running its input file again")
        elif rows == file.rows and unchanged(FileIdentity.from_dict(recorded), file.identity):
            kept[name] = record
        else:
            listed = file.identity.to_dict() if file.identity is not None else None
            notes.append(f"{name}: its input file changed since the part was written ({rows} rows, now {file.rows}; "
                         f"{recorded}, now {listed}): running it again")
    return kept, tuple(notes)
