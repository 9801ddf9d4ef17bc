"""What a run does to its output, decided once: one frozen ``NightPlan`` that every later step reads.

The driver calls ``plan_night`` once, when it knows the options that shape tonight's rows (the model,
its recipe, the decode: ``job.output.parts.output_options``), with what the run found before any work:
the planned input files and what the output prefix holds (``Held``: its parts, the finished manifest
with the table's snapshot, and, read when asked, parts' footers and the ids index). A first run,
``--resume``, ``--incremental``, ``--overwrite`` and a rollout are inputs to this one function, not
branches spread over the driver; the plan says, for every planned input file, what the night does with it
(keep, adopt, score, re-score) and why, and what leaves the table (removed parts, leaving rows).
``job.driver`` acts on it before any work (``begin_night``), the engine runs ``pending``, and
``job.night.finish`` verifies, commits and records what it says: none of them works it out again.

The rules, whatever the engine:
- ``--overwrite``: every planned file runs. A plain folder is cleared of everything of ours first;
  a Delta or Iceberg table is not: its next version replaces every row (``overwrite``), so its
  readers see the old table or the new one, never none.
- Nothing of ours under the prefix: every planned file runs.
- A finished table (``_SUCCESS.json``) and no flag: refused, naming the three flags.
- ``--incremental`` on a finished table: an input file unchanged since the snapshot keeps its
  part unread, while that part is there; a part the snapshot does not vouch for (a stopped night
  wrote it, or its file changed) is adopted when its footer proves it holds every row of the file
  as listed now, under tonight's options; every other planned file runs, a part gone missing
  included, and an unchanged file whose rows timed out; parts of input files no longer listed are
  removed (``--keep-removed``: kept while their file is gone).
- A file the table holds under other options than tonight's (another model, recipe, decode...):
  refused, naming what differs, ``--rollout-files`` and ``--overwrite``; with ``--rollout-files N``,
  the N oldest such files are re-scored tonight and the rest kept as they are (``job.night.rollout``).
- ``--resume`` on a finished table: a whole table (every part it lists there, none it does not
  know) has nothing to do, so a scheduler's retry of a finished job is a no-op; a table that is
  not whole (a night stopped before its manifest, a part deleted) is finished as ``--incremental``
  finishes it.
- Parts and no manifest (a first run was stopped): refused unless ``--resume`` or
  ``--incremental``, which adopt the parts their footers prove and run the other files; a part of
  no planned file is refused by ``--resume`` (the input changed) and removed by ``--incremental``.

A Delta or Iceberg table is shared: its log, not our listing, says where rows are. Other writers
compact our parts into files of theirs, vacuum them, delete rows: an input file the snapshot holds at
this version keeps its rows wherever they now lie, part file or not; a replaced, re-scored or gone input
file's rows leave by their lineage (``leaving``, committed by ``job.night.commit``); the only parts a
night deletes are its own that no version ever named (a stopped night's).
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity, Listing, input_relpath, unchanged
from job.input.dataset_check import InputColumns
from job.input.objects import is_group_name, key_ranges
from job.input.plan import InputFile, InputPlan
from job.night.formats import FOLDERS
from job.night.formats.by_source import Leaving
from job.night.held import UNREADABLE, Footer, Held
from job.night.manifest import MANIFEST, Manifest
from job.night.new_ids import moved_files
from job.night.options import difference_line, differing, model_label, options_key
from job.night.record import Snapshot, TableFile
from job.night.rollout import Choice, Rollout, choose
from job.output.parts import file_part_name
from storage import Location

# Options that change the table's columns, not only its rows' values: never mixed in one table, so never rolled out.
COLUMN_OPTIONS = frozenset({"layout", "predictions", "embeddings"})
# Why the night writes a part (``NightPlan.why``), by the input file's state.
NEW, CHANGED, MISSING, TIMED_OUT, ROLLOUT, OVERWRITE = (
    "new input file", "input file changed", "its part is gone or was never committed", "rows that timed out",
    "rollout: made by another model", "--overwrite")


@dataclass(frozen=True)
class NightPlan:
    """What this run does to the output, for every planned input file; decided once by ``plan_night``, read after."""

    input: InputPlan  # every planned input file: what the finished output holds
    output: Location
    run_id: str
    options: Mapping  # what shapes tonight's rows (job.output.parts.output_options)
    target: str  # their key (job.night.options.options_key): every part this run writes is made by it
    shared: bool = False  # a Delta or Iceberg table, which other writers commit to; False: the plain folder
    previous: Manifest | None = None  # the finished run whose table this run continues, or finds whole
    snapshot: Snapshot | None = None  # that run's table, parsed once
    planned: Mapping[str, InputFile] = field(default_factory=dict)  # part name -> its input file, after the night
    # The committed parts this run keeps, by name: None (the snapshot vouches for it, kept unread) or its footer
    # record (adopted: a stopped night wrote it, and its footer proves it).
    kept: Mapping[str, dict | None] = field(default_factory=dict)
    removed: tuple[str, ...] = ()  # parts of no planned file (a plain folder's gone or replaced files): deleted last
    kept_removed: Mapping[str, TableFile] = field(default_factory=dict)  # --keep-removed: gone file -> its kept entry
    # A shared table: the rows of input files replaced, re-scored or gone, which leave it by their lineage.
    leaving: Leaving = field(default_factory=Leaving)
    clear: bool = False  # --overwrite of a plain folder: everything of ours is deleted before any work
    done: bool = False  # --resume on a whole finished table: its manifest is the answer
    overwrite: bool = False  # a shared table's --overwrite: its next version replaces every row
    notes: tuple[str, ...] = ()  # what the user should hear about the decision (a part redone, and why)
    why: Mapping[str, str] = field(default_factory=dict)  # part this run writes -> why (NEW, CHANGED, ROLLOUT...)
    salt: str = ""  # the salt every new part's name takes (an --overwrite of a table: the run's id; Parts)
    salts: Mapping[str, str] = field(default_factory=dict)  # input path -> another salt for its part's name (a few files)
    budget: int | None = None  # --rollout-files: the files of another model a night re-scores at most
    rescored: int = 0  # files a rollout re-scores tonight (within the budget)
    taken_out: frozenset[str] = frozenset()  # parts a rollout counts as rolled out: another writer took every row out
    rollout: Rollout | None = None  # where a rollout stands after the night (None: the table is on one model)
    # Derived once from the above (``_derived``): what the final check, the commit and the manifest read.
    table: Mapping[str, InputFile] = field(default_factory=dict)  # every part of the table after the night
    relpath: Mapping[str, str] = field(default_factory=dict)  # each of those parts -> its input file's name
    unread: frozenset[str] = frozenset()  # parts the final check does not read (kept unread, kept removed)
    to_write: InputPlan | None = None  # the planned files whose part this run writes
    made_by: Mapping[str, str] = field(default_factory=dict)  # parts kept on another model than tonight's -> its key

    @property
    def pending(self) -> InputPlan:
        """What the engine runs: the files to write that have rows (the driver writes the empty files' parts)."""
        return dataclasses.replace(self.to_write, files=tuple(f for f in self.to_write.files if f.rows > 0))

    @property
    def adopted(self) -> dict[str, dict]:
        """Kept parts the snapshot did not vouch for, with their footer records: this run's manifest is the first to
        list them."""
        return {name: record for name, record in self.kept.items() if record is not None}

    @property
    def changes_table(self) -> bool:
        """Whether the run changes the table beyond running files: a part adopted or removed, a file newly gone but kept."""
        newly_gone = any(not entry.removed for entry in self.kept_removed.values())
        return bool(self.adopted or self.removed or self.leaving or newly_gone)

    @property
    def known(self) -> dict[str, str]:
        """The previous snapshot's parts and tonight's, each with its one input file (or group): a commit needs not
        read them to know whose rows they hold."""
        before = {entry.part: name for name, entry in self.snapshot.files.items()} if self.snapshot is not None else {}
        return before | dict(self.relpath)


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


def plan_night(config: JobConfig, plan: InputPlan, held: Held, options: Mapping, run_id: str) -> NightPlan:
    """The one decision of what the run does to its output (see the module docstring); JobError for what it refuses.

    Reads only what it must, through ``held``: the footers of parts the snapshot does not vouch for, and (with
    --keep-removed) the ids index.
    """
    shared, target = config.table_format != "parquet", options_key(options)
    base = NightPlan(plan, held.output, run_id, options, target, shared)
    if config.overwrite:
        salt = run_id if shared else ""  # a table's old parts stay named, for its readers of the old version
        planned, why = _named(plan, salt, OVERWRITE)
        if shared and held.snapshot is not None:
            strays = tuple(sorted(held.parts - {entry.part for entry in held.snapshot.files.values()}))
            night = dataclasses.replace(base, snapshot=held.snapshot, planned=planned, removed=strays, overwrite=True,
                                        why=why, salt=salt)
        else:
            night = dataclasses.replace(base, planned=planned, clear=bool(held.files), why=why, salt=salt)
    elif not held.files:
        planned, why = _named(plan, "", NEW)
        night = dataclasses.replace(base, planned=planned, why=why)
    elif MANIFEST in held.files:
        night = _on_finished(config, base, held)
    else:
        night = _on_partial(config, base, held)
    return _derived(night)


def _named(plan: InputPlan, salt: str, reason: str) -> tuple[dict[str, InputFile], dict[str, str]]:
    """Every planned file by its new part's name (salted by ``salt``), each written for ``reason``."""
    root = plan.location.path
    planned = {file_part_name(root, f, salt): f for f in plan.files}
    return planned, dict.fromkeys(planned, reason)


def _on_finished(config: JobConfig, base: NightPlan, held: Held) -> NightPlan:
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} already holds a finished job ({MANIFEST}); pass --incremental to run what the "
                       "input gained since, --overwrite to redo it all, or choose another --output")
    snapshot, shared = held.snapshot, config.table_format != "parquet"
    if not config.incremental and (snapshot is None or _whole(snapshot, held, shared)):
        _require_same_model(held, snapshot, base.target, base.options, config)
        return dataclasses.replace(base, previous=held.finished, snapshot=snapshot, done=True)
    if snapshot is None:
        raise JobError(f"{held.uri}/{MANIFEST} was written by an older version, without the table's snapshot "
                       "--incremental needs; run once with --overwrite to redo the table, then --incremental")
    previous = dataclasses.replace(base, previous=held.finished, snapshot=snapshot)
    names = _names_on(config, previous, held)
    planned, why = names.planned, names.why
    by_part = {entry.part: entry for entry in snapshot.files.values()}
    # A shared table's log says where the rows are: a part compacted away by another writer still holds its file.
    vouched = {name: None for name, file in planned.items() if name in by_part and unchanged(by_part[name].identity, file.identity)
               and (shared or _as_written(by_part[name], held))}
    kept, notes = _proven(planned, held.footers([n for n in sorted(held.parts) if n in planned and n not in vouched]),
                          base, config)
    gone = {entry.part: name for name, entry in snapshot.files.items() if entry.part not in planned}
    kept_removed = _kept_removed(config, base.input, planned, held, {gone[p]: by_part[p] for p in sorted(gone)
                                                                    if shared or p in held.parts}, {**vouched, **kept})
    staying = {e.part for e in kept_removed.values()}
    removed = tuple(n for n in sorted(held.parts) if n not in planned and n not in staying and not (shared and n in by_part))
    leaving = _leaving(frozenset(name for part, name in gone.items() if part not in staying), snapshot) if shared else Leaving()
    kept = {**vouched, **kept}
    why = {name: reason for name, reason in why.items() if name not in kept}
    notes = (*notes, *(f"{name}: another writer took some of its rows out of the table; the rollout leaves it as it is "
                       "(scoring it again would bring them back); a change of the file scores it" for name in names.choice.kept_back))
    night = dataclasses.replace(previous, planned=planned, kept=kept, removed=removed, kept_removed=kept_removed,
                                leaving=leaving, notes=notes, why=why, salts=names.salts, taken_out=names.taken_out,
                                budget=config.rollout_files, rescored=len(names.choice.picked))
    _require_same_model_kept(night, held, config)
    return night


@dataclass(frozen=True)
class _Names:
    """Every planned file by its part's name after the night, why each written part is, and the rollout's choice."""

    planned: dict[str, InputFile]
    why: dict[str, str]
    salts: dict[str, str]  # input path -> its part name's salt, where it takes one
    choice: Choice
    taken_out: frozenset[str]  # parts of files a rollout counts as rolled out: another writer took their every row out


def _names_on(config: JobConfig, base: NightPlan, held: Held) -> _Names:
    """A file the snapshot holds as it is keeps its part's name; a new or changed file gets a new one; an unchanged
    file whose rows timed out, or that a rollout picks, gets one salted (by the run; by tonight's options, so that a
    stopped rollout night's part is this night's, adopted)."""
    snapshot, root, target = base.snapshot, base.input.location.path, base.target
    entries = {f.path: snapshot.files.get(input_relpath(root, f.path)) for f in base.input.files}
    holds = {f.path: entries[f.path] for f in base.input.files if entries[f.path] is not None
             and not entries[f.path].removed and unchanged(entries[f.path].identity, f.identity)}
    timed_out = {path for path, e in holds.items() if config.incremental and e.transient}
    other = {input_relpath(root, path): e for path, e in holds.items()
             if path not in timed_out and _model(base, e) != target}
    for key in {_model(base, e) for e in other.values()}:
        recorded = _options_of(base, key)
        if recorded is not None and set(differing(recorded, base.options)) & COLUMN_OPTIONS:
            _refuse_other_columns(f"{base.output.uri}/{MANIFEST}", recorded, base.options)
    choice = choose(other, config.rollout_files or 0, held.rows_of if base.shared else None)
    picked = {posixpath.join(root, name) for name in choice.picked}
    salts = {path: base.run_id for path in timed_out} | {path: target for path in picked}
    planned, why = {}, {}
    for f in base.input.files:
        entry = holds.get(f.path)
        if f.path in salts:
            name, reason = file_part_name(root, f, salts[f.path]), TIMED_OUT if f.path in timed_out else ROLLOUT
        elif entry is not None:
            name, reason = entry.part, MISSING
        else:
            name, reason = file_part_name(root, f), CHANGED if entries[f.path] is not None else NEW
        planned[name], why[name] = f, reason
    return _Names(planned, why, salts, choice, frozenset(other[name].part for name in choice.taken_out))


def _model(night: NightPlan, entry: TableFile) -> str:
    """The key of the options ``entry``'s rows were made with: recorded, or (a snapshot recording none) the
    options of the manifest that wrote it."""
    return night.snapshot.model_of(entry) or options_key(night.previous.output_options or {})


def _options_of(night: NightPlan, key: str) -> Mapping:
    return night.snapshot.models.get(key) or night.previous.output_options


def _require_same_model_kept(night: NightPlan, held: Held, config: JobConfig) -> None:
    """Without --rollout-files, the table's kept files must have been made with tonight's options."""
    if config.rollout_files:
        return
    by_part = {entry.part: entry for entry in night.snapshot.files.values()}
    other = next((by_part[name] for name, record in night.kept.items() if record is None and name in by_part
                  and _model(night, by_part[name]) != night.target), None)
    if other is not None:
        _refuse_other_model(held, _options_of(night, _model(night, other)), night.options)


def _require_same_model(held: Held, snapshot: Snapshot | None, target: str, options: Mapping, config: JobConfig) -> None:
    """--resume on a whole table: it was made with tonight's options (or the rollout's)."""
    recorded = held.finished.output_options
    if snapshot is not None and snapshot.made_by is not None:
        recorded = snapshot.models.get(snapshot.made_by, recorded)
    if recorded is None or (options_key(recorded) != target and not config.rollout_files):
        _refuse_other_model(held, recorded, options)


def _refuse_other_model(held: Held, recorded: Mapping | None, options: Mapping) -> None:
    where = f"{held.uri}/{MANIFEST}"
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    if set(differing(recorded, options)) & COLUMN_OPTIONS:
        _refuse_other_columns(where, recorded, options)
    raise JobError(f"{where}: the table's rows were made with other options ({difference_line(recorded, options)}); "
                   "run with the same options, pass --rollout-files N to score new files with these and re-score N of "
                   "the others a night, or --overwrite to redo it all")


def _refuse_other_columns(where: str, recorded: Mapping, options: Mapping) -> None:
    raise JobError(f"{where}: the table's rows were made with other options ({difference_line(recorded, options)}), "
                   "which give it other columns; a table holds one set of columns, so no rollout can mix them: run "
                   "with the same options, or pass --overwrite to redo it all")


def _kept_removed(config: JobConfig, plan: InputPlan, planned: Mapping[str, InputFile], held: Held,
                  gone: Mapping[str, TableFile], kept: Collection[str]) -> dict[str, TableFile]:
    """--keep-removed: the files gone (``gone``: by name, their table entries) whose parts stay, less those that
    reappear whole under another name (a renamed file: kept, the table would hold its ids twice)."""
    if not config.keep_removed or not gone:
        return {}
    new = [file for name, file in planned.items() if name not in kept and file.rows]
    moved = set()
    if new and held.snapshot.index is not None:
        moved = moved_files(plan, new, held.id_index(), {name: e.rows for name, e in gone.items()})
    return {name: entry for name, entry in gone.items() if name not in moved}


def _on_partial(config: JobConfig, base: NightPlan, held: Held) -> NightPlan:
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} holds a partial output of an earlier run ({len(held.parts)} committed parts, no "
                       f"{MANIFEST}); pass --resume to finish it or --overwrite to start over")
    planned, why = _named(base.input, "", NEW)
    stray = sorted(n for n in held.parts if n not in planned)
    if stray and not config.incremental:
        _require_earlier_versions(held, stray, base)
    kept, notes = _proven(planned, held.footers([n for n in sorted(held.parts) if n in planned]), base, config)
    why = {name: reason for name, reason in why.items() if name not in kept}
    return dataclasses.replace(base, planned=planned, kept=kept, removed=tuple(stray), notes=notes, why=why)


def _require_earlier_versions(held: Held, stray: list[str], base: NightPlan) -> None:
    """--resume: parts of no planned part name must be earlier versions of planned input files (each version of a
    file gets a part of its own), which the run replaces; a part of an input file no longer planned is refused."""
    sources = {input_relpath(base.input.location.path, f.path) for f in base.input.files}
    foreign = [name for name, (_, record) in held.footers(stray).items() if (record or {}).get("input_file") not in sources]
    if foreign:
        raise JobError(f"{held.uri}/{foreign[0]} belongs to no input file of this plan (the input changed, or "
                       "--input/--limit differ from the first run); pass --overwrite to start over")


def _leaving(units: frozenset[str], snapshot: Snapshot) -> Leaving:
    """The rows of the input ``units`` leaving a shared table: an input file's by its name, an object group's by the
    range of keys it held (its rows carry their objects' keys), and by its name (as rows written before did)."""
    if not units or not all(is_group_name(name) for name in snapshot.files):
        return Leaving(units)
    ranges = key_ranges(snapshot.files)
    return Leaving(units, tuple(ranges[name] for name in sorted(units)))


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


def _proven(planned: Mapping[str, InputFile], footers: Mapping[str, Footer], night: NightPlan,
            config: JobConfig) -> tuple[dict[str, dict], tuple[str, ...]]:
    """The parts whose footers prove they hold every planned row of the listed version of their input file, made with
    tonight's options, and the notes on the others, which are run again (their part replaced: one a stopped night
    made with other options only with --rollout-files; without it, refused)."""
    kept, notes = {}, []
    for name, (rows, record) in footers.items():
        file, recorded = planned[name], (record or {}).get("identity")
        if (rows, record) == UNREADABLE:
            notes.append(f"{name}: the part cannot be read (cut short or damaged): running its input file again")
        elif not (rows == file.rows and unchanged(FileIdentity.from_dict(recorded), file.identity)):
            listed = file.identity.to_dict() if file.identity is not None else None
            notes.append(f"{name}: its input file changed since the part was written ({rows} rows, now {file.rows}; "
                         f"{recorded}, now {listed}): running it again")
        elif record.get("options") is None or options_key(record["options"]) != night.target:
            if not config.rollout_files:
                raise JobError(f"{night.output.uri_of(night.output.join(name))} was written with other options "
                               f"({difference_line(record.get('options') or {}, night.options)}); run with the same "
                               "options, pass --rollout-files N to re-score it with these, or --overwrite to redo it all")
            notes.append(f"{name}: made with other options than tonight's: running its input file again")
        else:
            kept[name] = record
    return kept, tuple(notes)


def _rollout(night: NightPlan) -> Rollout | None:
    """Where the table stands after the night, when it holds rows of another model than tonight's (or just did)."""
    keys: dict[str, int] = {}
    images: dict[str, int] = {}
    for name, file in night.planned.items():
        key = night.made_by.get(name, night.target)
        keys[key] = keys.get(key, 0) + 1
        images[key] = images.get(key, 0) + file.rows
    was_rolling = night.snapshot is not None and len(night.snapshot.models) > 1
    if len(keys) == 1 and not night.rescored and not was_rolling:
        return None
    labels = {key: model_label(_options_of(night, key) if key != night.target else night.options) for key in keys}
    return Rollout(night.target, labels, keys, images, night.rescored, night.budget)


def _derived(night: NightPlan) -> NightPlan:
    """The plan with what the later steps read, derived once: the table's parts after the night, their input files'
    names, those the final check does not read, the files to write, and the parts kept on another model."""
    root = night.input.location.path
    kept_removed = night.kept_removed
    table = night.planned
    if kept_removed:
        table = {**table, **{e.part: InputFile(name, e.rows) for name, e in kept_removed.items()}}
    relpath = {part: input_relpath(root, f.path) for part, f in night.planned.items()} | {
        e.part: name for name, e in kept_removed.items()}
    unread = frozenset(name for name, record in night.kept.items() if record is None) | {e.part for e in kept_removed.values()}
    writing = set(night.planned) - set(night.kept) if not night.done else set()
    to_write = dataclasses.replace(night.input, files=tuple(f for name, f in night.planned.items() if name in writing))
    made_by = {}
    if night.snapshot is not None and night.previous is not None:
        by_part = {entry.part: entry for entry in night.snapshot.files.values()}
        made_by = {part: key for part in unread - night.taken_out
                   if part in by_part and (key := _model(night, by_part[part])) != night.target}
    night = dataclasses.replace(night, table=table, relpath=relpath, unread=unread, to_write=to_write, made_by=made_by)
    rolling = not night.done and night.previous is not None
    return dataclasses.replace(night, rollout=_rollout(night) if rolling else None)
