"""What a run does to its output, decided once: one frozen ``NightPlan`` that every later step reads.

A night's plan is one ``Decision`` per input unit (``job.night.decision``: keep, adopt, score, re-score,
withheld, drop, keep-removed, and why) and the table-level facts beside them: the table it continues, the stray
parts it leaves, what it must tell the user. ``job.night.planning.plan_night`` makes it once; ``job.driver`` acts on
it before any work (``begin_night``), the engine runs ``pending``, and ``job.night.finish`` verifies, commits and
records what it says. The views the later steps read (the table's parts, the files to write, the rows leaving, the
parts whose rows other writers may delete meanwhile) are derived from the decisions once, here; none of them is
worked out again anywhere else.

A Delta or Iceberg table is shared: its log, not our listing, says where rows are. Other writers compact our parts
into files of theirs, vacuum them, delete rows: an input file the snapshot holds at this version keeps its rows
wherever they now lie, part file or not; a replaced, re-scored or gone input file's rows leave by their lineage
(``leaving``, committed by ``job.night.commit``), and the rows another writer deleted of a file the night scores
again are withheld (``watched``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from job.input.objects import is_group_name, key_ranges
from job.input.plan import InputFile, InputPlan
from job.night.decision import ADOPT, DROP, KEEP_REMOVED, LOST, RESCORE, ROLLOUT, TIMED_OUT, Decision
from job.night.formats.by_source import Leaving
from job.night.formats.withheld import Watched
from job.night.manifest import Manifest
from job.night.models import TableModels
from job.night.record import Snapshot, TableFile
from job.output.parts import file_part_name
from storage import Location


# Reasons a unit is scored from the input its rows in the table were made from: every id of its part the table no
# longer holds was deleted by another writer, and is withheld (job.night.formats.withheld).
AS_THEY_WERE = frozenset({ROLLOUT, TIMED_OUT, LOST})


@dataclass(frozen=True)
class NightPlan:
    """What this run does to the output, for every input unit; decided once by ``plan_night``, read after."""

    input: InputPlan  # every planned input file: what the finished output holds
    output: Location
    run_id: str
    options: Mapping  # what shapes tonight's rows (job.output.parts.output_options)
    target: str  # their key (job.night.options.options_key): every part this run writes is made by it
    decisions: tuple[Decision, ...] = ()  # one per input unit, tonight's and those gone from the input, by unit
    shared: bool = False  # a Delta or Iceberg table, which other writers commit to; False: the plain folder
    previous: Manifest | None = None  # the finished run whose table this run continues, or finds whole
    snapshot: Snapshot | None = None  # that run's table, parsed once
    models: TableModels = field(default_factory=TableModels)  # which options made each of its entries
    # Parts of ours no decision keeps (a stopped night's, an old version's of a replaced file on the plain folder):
    # deleted after the manifest on the plain folder; retired on a shared table, which an older version may name.
    removed: tuple[str, ...] = ()
    live_strays: Mapping[str, str] = field(default_factory=dict)  # strays the log names, not adopted -> their unit
    clear: bool = False  # --overwrite of a plain folder: everything of ours is deleted before any work
    done: bool = False  # --resume on a finished table with nothing left to do: its manifest is the answer
    overwrite: bool = False  # a shared table's --overwrite: its next version replaces every row
    notes: tuple[str, ...] = ()  # what the user should hear about the decision (a part redone, and why)
    budget: int | None = None  # --rollout-files: the files of another model a night re-scores at most
    planned_version: int | None = None  # the shared table's version the night planned on (its log's)
    present: Mapping[str, int] = field(default_factory=dict)  # rows the table held of some units at the plan
    held_ids: Mapping[str, frozenset[str]] = field(default_factory=dict)  # a changed file's ids the table held then
    window: str | None = None  # --rollout-time: what the window chose, and why (the line the night says)

    # -- what the later steps read, derived once from the decisions --

    @cached_property
    def table(self) -> dict[str, InputFile]:
        """Every part of the table after the night -> its input file (a kept-removed one: its name and rows)."""
        return {d.part: d.file if d.file is not None else InputFile(d.unit, d.entry.rows)
                for d in self.decisions if d.in_table}

    @cached_property
    def relpath(self) -> dict[str, str]:
        """Each part of the table after the night -> its input unit."""
        return {d.part: d.unit for d in self.decisions if d.in_table}

    @cached_property
    def unread(self) -> frozenset[str]:
        """The parts the final check takes from the snapshot (kept unread, withheld, kept removed)."""
        return frozenset(d.part for d in self.decisions if d.in_table and d.unread)

    @cached_property
    def to_write(self) -> InputPlan:
        """The planned files whose part this run writes."""
        return dataclasses.replace(self.input, files=tuple(d.file for d in self.decisions if d.writes))

    @property
    def pending(self) -> InputPlan:
        """What the engine runs: the files to write that have rows (the driver writes the empty files' parts)."""
        return dataclasses.replace(self.to_write, files=tuple(f for f in self.to_write.files if f.rows > 0))

    @cached_property
    def kept(self) -> dict[str, dict | None]:
        """The listed units' parts kept from earlier runs: unread (None), or adopted (their footer records)."""
        return {d.part: d.record for d in self.decisions if d.action == ADOPT or (d.file is not None and d.unread)}

    @property
    def adopted(self) -> dict[str, dict]:
        """Adopted parts with their footer records: this run's manifest is the first to list them."""
        return {d.part: d.record for d in self.decisions if d.action == ADOPT}

    @cached_property
    def why(self) -> dict[str, str]:
        """Each part this run writes -> why."""
        return {d.part: d.reason for d in self.decisions if d.writes}

    @cached_property
    def salts(self) -> dict[str, str]:
        """Input path -> the salt of its new part's name, where it takes one."""
        return {d.file.path: d.salt for d in self.decisions if d.writes and d.salt}

    @cached_property
    def names(self) -> dict[str, str]:
        """Input path -> the name of the part this run writes for it, where it is not the file's plain name
        (``job.output.parts.Parts.names``: pickled into every writer, so only the few that differ)."""
        root = self.input.location.path
        return {d.file.path: d.part for d in self.decisions if d.writes and d.part != file_part_name(root, d.file)}

    @cached_property
    def made_by(self) -> dict[str, str]:
        """Parts of the table after the night made with other options than tonight's -> their key."""
        return {d.part: d.model for d in self.decisions if d.in_table and d.model != self.target}

    @cached_property
    def kept_removed(self) -> dict[str, TableFile]:
        """--keep-removed: input units gone whose parts stay -> their entries."""
        return {d.unit: d.entry for d in self.decisions if d.action == KEEP_REMOVED}

    @property
    def rescored(self) -> int:
        """Files of another model re-scored tonight for a rollout."""
        return sum(d.reason == ROLLOUT and d.action in (RESCORE, ADOPT) for d in self.decisions)

    @cached_property
    def leaving(self) -> Leaving:
        """A shared table: the rows leaving it by their lineage, of units dropped or replaced and of lost strays."""
        if not self.shared or self.overwrite:
            return Leaving()
        units = frozenset({d.unit for d in self.decisions if d.action == DROP or d.replaces} | set(self.live_strays.values()))
        if not units:
            return Leaving()
        groups = [u for u in {*units, *(d.unit for d in self.decisions)} if is_group_name(u)]
        if not groups:
            return Leaving(units)
        ranges = key_ranges({*groups, *(self.snapshot.files if self.snapshot is not None else ())})
        return Leaving(units, tuple(ranges[name] for name in sorted(units) if name in ranges))

    @cached_property
    def known(self) -> dict[str, str]:
        """Our parts the table may hold (the snapshot's, tonight's, the strays the log names) -> their one input unit."""
        before = {entry.part: name for name, entry in self.snapshot.files.items()} if self.snapshot is not None else {}
        return before | dict(self.live_strays) | self.relpath

    @cached_property
    def adds(self) -> dict[str, InputFile]:
        """The parts the night's commit adds: those it writes, and those it adopts that no version names yet."""
        return {d.part: d.file for d in self.decisions if d.writes or (d.action == ADOPT and not d.live)}

    @cached_property
    def watched(self) -> dict[str, Watched]:
        """The parts added whose unit the table held rows of: rows another writer deleted are withheld from them."""
        if not self.shared or self.overwrite:
            return {}
        lost = set(self.live_strays.values())
        watched = {}
        for d in self.decisions:
            if d.part in self.adds and (d.entry is not None or d.unit in lost):
                whole = d.entry is not None and self.present.get(d.unit, -1) == d.entry.rows  # no row ever deleted
                watched[d.part] = Watched(d.unit, Leaving(frozenset({d.unit}), self._range(d.unit)),
                                          d.reason in AS_THEY_WERE, whole, self.held_ids.get(d.unit, frozenset()))
        return watched

    def _range(self, unit: str) -> tuple:
        if not is_group_name(unit):
            return ()
        names = {*(d.unit for d in self.decisions), *(self.snapshot.files if self.snapshot is not None else ())}
        return (key_ranges(n for n in names if is_group_name(n))[unit],)

    @property
    def changes_table(self) -> bool:
        """Whether the run changes the table beyond running files: a part adopted or removed, a file newly gone but
        kept, rows leaving."""
        newly_gone = any(not d.entry.removed for d in self.decisions if d.action == KEEP_REMOVED)
        return bool(self.adopted or self.removed or self.leaving or newly_gone)
