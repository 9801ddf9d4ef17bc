"""A night on a finished table (``--incremental``, ``--resume``): one decision per input unit, in one pass.

- An input file the snapshot holds as it is keeps its part unread (on the plain folder, while that part is there as
  written; on a shared table wherever other writers moved its rows), unless its rows timed out (scored again), or it
  was made by another model than tonight's: then ``--rollout-files N`` re-scores the N oldest such files
  (``job.night.rollout``), and without it the night is refused, naming what differs (``job.night.models``).
- A new or changed file is scored, unless a part a stopped night left proves it (``job.night.strays``): adopted.
- A file whose rows a night whose manifest was lost committed (a part the log names and no manifest does) is adopted
  from that part, or scored again: the snapshot no longer says what the table holds of it.
- A file gone from the input: its rows leave (``--keep-removed``: they stay, unless the file reappears whole under
  another name).
- ``--resume`` is such a night too: after a night stopped at any point (exit 4, a kill, Ctrl-C) it does what is left;
  when nothing is, the manifest is the answer (``done``), so a scheduler's retry of a finished job is a no-op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity, input_relpath, unchanged
from job.input.plan import InputFile
from job.night.decision import (ADOPT, AS_IS, CHANGED, DROP, GONE, KEEP, KEEP_REMOVED, LOST, MISSING, NEW, RESCORE, ROLLOUT,
                                SCORE, TIMED_OUT, WITHHELD, Decision)
from job.night.held import Held
from job.night.manifest import MANIFEST
from job.night.models import TableModels, refuse_other_options
from job.night.options import options_key
from job.night.new_ids import moved_files
from job.night.naming import new_part, stray_notes
from job.night.plan import NightPlan
from job.night.record import Snapshot, TableFile
from job.night.rollout import choose
from job.night.strays import Stray, Strays, read_strays
from job.night.window import Window, fit


def on_finished(config: JobConfig, base: NightPlan, held: Held, window: Window | None = None) -> NightPlan:
    """The plan of a night on the finished table ``held`` holds (see the module docstring); ``window``: --rollout-time's,
    with the rate this table's nights measured."""
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} already holds a finished job ({MANIFEST}); pass --incremental to run what the "
                       "input gained since, --overwrite to redo it all, or choose another --output")
    snapshot = held.snapshot
    if snapshot is None:
        if config.incremental:
            raise JobError(f"{held.uri}/{MANIFEST} was written by an older version, without the table's snapshot "
                           "--incremental needs; run once with --overwrite to redo the table, then --incremental")
        recorded = held.finished.output_options
        if recorded is None or options_key(recorded) != base.target:
            refuse_other_options(f"{held.uri}/{MANIFEST}", recorded, base.options, bool(config.rollout_files))
        return dataclasses.replace(base, previous=held.finished, done=True)
    models = TableModels.of(snapshot, held.finished)
    night = dataclasses.replace(base, previous=held.finished, snapshot=snapshot, models=models,
                                budget=config.rollout_files)
    strays = read_strays(held, {e.part for e in snapshot.files.values()}, base.shared)
    decisions, notes, present, (budget, chosen) = _decide(config, night, held, strays, window)
    in_table = {d.part for d in decisions if d.in_table}
    removed = held.parts - in_table if not base.shared else held.parts - in_table - {e.part for e in snapshot.files.values()}
    live = {s.name: s.unit for group in strays.by_unit.values() for s in group if s.live and s.name not in in_table}
    night = dataclasses.replace(night, decisions=decisions, notes=notes, removed=tuple(sorted(removed)),
                                live_strays=live, present=present, window=chosen, budget=budget or config.rollout_files)
    if night.watched:  # the version planned on, and the ids a changed file's rows had then: a DELETE after them wins
        changed = {w.unit: w.rows for w in night.watched.values() if not w.unchanged}
        night = dataclasses.replace(night, planned_version=held.log_version, held_ids=held.ids_of(changed))
    if config.resume and not config.incremental and not (night.to_write.files or night.changes_table):
        return dataclasses.replace(night, done=True)
    return night


def _decide(config: JobConfig, night: NightPlan, held: Held, strays: Strays,
            window: Window | None) -> tuple[tuple[Decision, ...], tuple[str, ...], dict, tuple[int, str | None]]:
    """Every input unit's decision (tonight's files, then those gone), the notes to say, the rows the table held of
    each of its units where they were counted (a shared table in a rollout), and the night's budget of re-scored files
    with why the window chose it."""
    root, snapshot, models = night.input.location.path, night.snapshot, night.models
    files = {input_relpath(root, f.path): f for f in night.input.files}
    lost = strays.live_units
    redo = {u for u, f in files.items() if _as_is(snapshot.files.get(u), f) and snapshot.files[u].transient and u not in lost}
    others = {u: snapshot.files[u] for u, f in files.items() if _as_is(snapshot.files.get(u), f) and u not in redo
              and u not in lost and models.key(snapshot.files[u]) != night.target}
    _refuse_unmixable(night, held, others, bool(config.rollout_files or config.rollout_time))
    present = _present(night, held, others)
    budget, chosen = _budget(config, window, files, snapshot, others, present if night.shared else None, redo | lost)
    choice = choose(others, budget, present if night.shared else None)
    picked, taken_out = set(choice.picked), set(choice.taken_out)
    taken = held.parts | {e.part for e in snapshot.files.values()} | set(snapshot.retired)
    notes: list[str] = []
    decisions = [_decide_file(night, held, strays, unit, file, redo, picked, taken_out, taken, notes)
                 for unit, file in files.items()]
    decisions += _gone(config, night, held, files)
    return tuple(sorted(decisions, key=lambda d: d.unit)), tuple(notes), present, (budget, chosen)


def _budget(config: JobConfig, window: Window | None, files: Mapping[str, InputFile], snapshot: Snapshot,
            others: Mapping[str, TableFile], present: Mapping[str, int] | None, again: set[str]) -> tuple[int, str | None]:
    """The files of another model the night re-scores at most: --rollout-files, and what fits in --rollout-time's
    window (the fewer), with the line that says why the window chose so."""
    if window is None:
        return config.rollout_files or 0, None
    candidates = [u for u in choose(others, len(others), present).picked]  # oldest first, none whose rows were all deleted
    scoring = sum(f.rows for u, f in files.items() if u in again or not _as_is(snapshot.files.get(u), f))
    fitted = fit(window, scoring, [present.get(u, others[u].rows) if present else others[u].rows for u in candidates])
    if config.rollout_files and config.rollout_files < fitted.files:
        return config.rollout_files, f"{fitted.why}; --rollout-files {config.rollout_files} takes fewer"
    return fitted.files, fitted.why


def _as_is(entry: TableFile | None, file: InputFile) -> bool:
    """Whether the table holds ``file`` as it is listed now (its entry made from this version of it)."""
    return entry is not None and not entry.removed and unchanged(entry.identity, file.identity)


def _decide_file(night: NightPlan, held: Held, strays: Strays, unit: str, file: InputFile, redo: set, picked: set,
                 taken_out: set, taken: set, notes: list) -> Decision:
    entry, target = night.snapshot.files.get(unit), night.target
    same = _as_is(entry, file)
    stray = strays.proving(unit, file, target)
    if unit in strays.live_units:  # a lost manifest's night committed rows of it: adopt them, or score it again
        as_lost = any(unchanged(FileIdentity.from_dict((s.record or {}).get("identity")), file.identity)
                      for s in strays.live_of(unit))
        return _scored(night, strays, unit, file, LOST if same or as_lost else CHANGED, stray, taken, notes, entry,
                       salted=True)
    if same and unit in redo:
        return _scored(night, strays, unit, file, TIMED_OUT, stray, taken, notes, entry, salted=True)
    if same and night.models.key(entry) != target:
        if unit in picked:
            return _scored(night, strays, unit, file, ROLLOUT, stray, taken, notes, entry, salted=True)
        if unit in taken_out:  # another writer deleted every row: on tonight's model with nothing to score
            return Decision(unit, file, WITHHELD, "every row deleted by another writer", entry.part, target, entry=entry)
        return Decision(unit, file, KEEP, AS_IS, entry.part, night.models.key(entry), entry=entry)
    if same:
        return _kept_or_redone(night, held, unit, file, entry, notes)
    return _scored(night, strays, unit, file, NEW if entry is None else CHANGED, stray, taken, notes, entry)


def _scored(night: NightPlan, strays: Strays, unit: str, file: InputFile, reason: str, stray, taken: set, notes: list,
            entry: TableFile | None, salted: bool = False) -> Decision:
    """``file`` adopted from a stray part that proves it, else scored under a new part's name (salted by the run: a
    name no part had; a new or changed file's plain name, unless a part has it)."""
    if stray is not None:
        return Decision(unit, file, ADOPT, reason, stray.name, night.target, record=stray.record, live=stray.live,
                        entry=entry)
    if not night.budget:
        strays.require_same_options(unit, file, night.options, night.output)
    notes += stray_notes(strays, unit, file, night.options)
    action = RESCORE if reason in (ROLLOUT, TIMED_OUT) else SCORE
    return new_part(night.input, file, reason, night.run_id if salted else "", taken, night.target, action,
                    night.run_id, entry)


def _kept_or_redone(night: NightPlan, held: Held, unit: str, file: InputFile, entry: TableFile, notes: list) -> Decision:
    """A file the table holds as it is, made with tonight's options: kept unread (a shared table, or the plain folder
    holding its part as written); else its part is read, and adopted when it proves the file, or redone."""
    if night.shared or (entry.part in held.parts and (entry.size is None or held.sizes.get(entry.part) == entry.size)):
        return Decision(unit, file, KEEP, AS_IS, entry.part, night.target, entry=entry)
    if entry.part in held.parts:
        rows, record = held.footers([entry.part])[entry.part]
        part = Stray(entry.part, rows, record, False)
        if part.proves(file, night.target):
            return Decision(unit, file, ADOPT, AS_IS, entry.part, night.target, record=record, entry=entry)
        notes.append(f"{entry.part}: {part.why_not(file, night.options)}: running its input file again")
    return Decision(unit, file, SCORE, MISSING, entry.part, night.target, entry=entry)


def _gone(config: JobConfig, night: NightPlan, held: Held, files: Mapping[str, InputFile]) -> list[Decision]:
    """The snapshot's units no longer listed: dropped, or (--keep-removed) kept, unless a new file holds every id of
    one (a renamed file: kept, the table would hold its ids twice)."""
    snapshot = night.snapshot
    gone = {u: e for u, e in snapshot.files.items() if u not in files}
    keep = {u: e for u, e in gone.items() if night.shared or e.part in held.parts} if config.keep_removed else {}
    if keep:
        new = [f for u, f in files.items() if f.rows and not _as_is(snapshot.files.get(u), f)]
        if new and snapshot.index is not None:
            moved = moved_files(night.input, new, held.id_index(), {u: e.rows for u, e in keep.items()})
            keep = {u: e for u, e in keep.items() if u not in moved}
    return [Decision(u, None, KEEP_REMOVED, GONE, e.part, night.models.key(e), entry=e) if u in keep
            else Decision(u, None, DROP, GONE, e.part, night.models.key(e), entry=e) for u, e in sorted(gone.items())]


def _refuse_unmixable(night: NightPlan, held: Held, others: Mapping[str, TableFile], rollout: bool) -> None:
    """Rows kept on other options than tonight's: refused without --rollout-files (``rollout``), and, with it, those
    no rollout may mix with tonight's (other columns; the same model, which no reader could tell apart)."""
    for key in sorted({night.models.key(e) for e in others.values()}):
        refuse_other_options(f"{held.uri}/{MANIFEST}", night.models.options_of(key) or None, night.options, rollout)


def _present(night: NightPlan, held: Held, others: Mapping[str, TableFile]) -> dict[str, int]:
    """A shared table in a rollout: how many rows it holds now of each of the snapshot's units (deleted ones out)."""
    rolling = bool(others) or len(night.models.options) > 1
    if not night.shared or not rolling:
        return {}
    return held.rows_of(sorted(night.snapshot.files))
