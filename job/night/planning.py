"""The night's one decision, ``plan_night``: what a run does to its output, as a ``NightPlan`` (``job.night.plan``).

The driver calls ``plan_night`` once, when it knows the options that shape tonight's rows (the model,
its recipe, the decode: ``job.output.parts.output_options``), with what the run found before any work:
the planned input files and what the output prefix holds (``Held``: its parts, the finished manifest
with the table's snapshot, and, read when asked, parts' footers, the ids index and the table's log). A first
run, ``--resume``, ``--incremental``, ``--overwrite`` and a rollout are inputs to this one function, not
branches spread over the driver:

- ``--overwrite``: every planned file runs. A plain folder is cleared of everything of ours first;
  a Delta or Iceberg table is not: its next version replaces every row (``overwrite``), so its
  readers see the old table or the new one, never none.
- Nothing of ours under the prefix: every planned file runs.
- A finished table (``_SUCCESS.json``) and no flag: refused, naming the three flags.
- ``--incremental`` (and ``--resume``) on a finished table: ``job.night.continued``.
- Parts and no manifest (a first run was stopped, maybe after its commit): refused unless ``--resume`` or
  ``--incremental``, which adopt the parts their footers prove (``job.night.strays``) and run the other files; a part
  of no planned file is refused by ``--resume`` (the input changed) and removed by ``--incremental``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import input_relpath
from job.input.plan import InputPlan
from job.night.continued import on_finished
from job.night.decision import ADOPT, NEW, OVERWRITE, Decision
from job.night.held import Held
from job.night.manifest import MANIFEST
from job.night.naming import new_part, stray_notes
from job.night.options import options_key
from job.night.plan import NightPlan
from job.night.strays import read_strays
from job.night.window import Window


def plan_night(config: JobConfig, plan: InputPlan, held: Held, options: Mapping, run_id: str,
               window: Window | None = None) -> NightPlan:
    """The one decision of what the run does to its output (see the module docstring); JobError for what it refuses.

    Reads only what it must, through ``held``: the footers of parts the snapshot does not list, the table's log where
    such parts are or where rows may have been deleted, and (with --keep-removed) the ids index. ``window``:
    --rollout-time's, with the rate this table's nights measured (the driver's).
    """
    shared, target = config.table_format != "parquet", options_key(options)
    base = NightPlan(plan, held.output, run_id, options, target, shared=shared)
    if config.overwrite:
        return _overwrite(config, base, held)
    if not held.files:
        return dataclasses.replace(base, decisions=_scored(plan, (), NEW, "", target))
    if MANIFEST in held.files:
        return on_finished(config, base, held, window)
    return _on_partial(config, base, held)


def _overwrite(config: JobConfig, base: NightPlan, held: Held) -> NightPlan:
    """Every planned file scored again: a table's parts salted by the run (its old ones stay named for its older
    versions' readers), and every stray of ours retired with them; a plain folder cleared first."""
    if not base.shared:
        return dataclasses.replace(base, decisions=_scored(base.input, (), OVERWRITE, "", base.target),
                                   clear=bool(held.files))
    listed = {entry.part for entry in held.snapshot.files.values()} if held.snapshot is not None else set()
    strays = tuple(sorted(held.parts - listed)) if held.snapshot is not None else ()
    return dataclasses.replace(base, decisions=_scored(base.input, (), OVERWRITE, base.run_id, base.target),
                               snapshot=held.snapshot, removed=strays, overwrite=True)


def _scored(plan: InputPlan, taken: frozenset[str] | tuple, reason: str, salt: str, target: str) -> tuple[Decision, ...]:
    """Every planned file scored for ``reason``, its part named with ``salt`` (or the run's, where ``taken`` holds the
    plain name)."""
    return tuple(new_part(plan, f, reason, salt, taken, target) for f in plan.files)


def _on_partial(config: JobConfig, base: NightPlan, held: Held) -> NightPlan:
    """Parts and no manifest: a first run was stopped (before its manifest, maybe after its commit)."""
    if not (config.resume or config.incremental):
        raise JobError(f"{held.uri} holds a partial output of an earlier run ({len(held.parts)} committed parts, no "
                       f"{MANIFEST}); pass --resume to finish it or --overwrite to start over")
    strays = read_strays(held, (), base.shared)
    plan, root = base.input, base.input.location.path
    sources = {input_relpath(root, f.path) for f in plan.files}
    foreign = sorted(s.name for group in strays.by_unit.values() for s in group if s.unit not in sources)
    if foreign and not config.incremental:
        raise JobError(f"{held.uri}/{foreign[0]} belongs to no input file of this plan (the input changed, or "
                       "--input/--limit differ from the first run); pass --overwrite to start over")
    decisions, notes = [], []
    for f in plan.files:
        unit = input_relpath(root, f.path)
        stray = strays.proving(unit, f, base.target)
        if stray is not None:
            decisions.append(Decision(unit, f, ADOPT, NEW, stray.name, base.target, record=stray.record, live=stray.live))
            continue
        if not config.rollout_files:
            strays.require_same_options(unit, f, base.options, base.output)
        notes += stray_notes(strays, unit, f, base.options)
        decisions.append(new_part(plan, f, NEW, "", held.parts, base.target, run_id=base.run_id))
    kept = {d.part for d in decisions}
    removed = tuple(sorted(held.parts - kept))
    live = {s.name: s.unit for group in strays.by_unit.values() for s in group if s.live and s.name not in kept}
    night = dataclasses.replace(base, decisions=tuple(decisions), removed=removed, notes=tuple(notes), live_strays=live)
    if night.watched:  # a first night killed after its commit: the rows it committed, as the later nights' are
        changed = {w.unit: w.rows for w in night.watched.values() if not w.unchanged}
        night = dataclasses.replace(night, planned_version=held.log_version, held_ids=held.ids_of(changed))
    return night
