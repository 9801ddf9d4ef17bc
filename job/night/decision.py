"""One decision per input unit: what tonight does with an input file (or a group of image objects), and why.

A night's plan (``job.night.plan.NightPlan``) is a row of these per unit, made in one pass by ``plan_night``: the
unit, as listed tonight; the action; the reason; the part that holds its rows after the night; the model that made
(or makes) them. ``--dry-run`` prints them; the engines run the units to score; the final check, the commit and the
manifest read them. Nothing later works a unit's fate out again.
"""

from __future__ import annotations

from dataclasses import dataclass

from job.input.plan import InputFile
from job.night.record import TableFile

# Actions: what the night does with a unit.
KEEP = "keep"  # the table holds its rows as they are: its part is kept, unread
ADOPT = "adopt"  # a part a stopped (or unrecorded) night wrote proves it: kept, read by the final check, not scored
SCORE = "score"  # its rows are scored tonight: a new or changed file, a part gone, a lost night's file
RESCORE = "rescore"  # an input unit as it was, scored again: a rollout of another model, rows that timed out
WITHHELD = "withheld"  # a rollout would re-score it, but another writer deleted every row of it: left out, as it is
DROP = "drop"  # gone from the input: its rows leave the table
KEEP_REMOVED = "keep-removed"  # gone from the input, its rows kept (--keep-removed)
ACTIONS = (KEEP, ADOPT, SCORE, RESCORE, WITHHELD, DROP, KEEP_REMOVED)

# Reasons: why a unit is scored (SCORE, RESCORE, or ADOPT in their place), or why it is left as it is.
NEW, CHANGED, MISSING, TIMED_OUT, ROLLOUT, OVERWRITE, LOST, GONE, AS_IS = (
    "new input file", "input file changed", "its part is gone or was never committed", "rows that timed out",
    "rollout: made by another model", "--overwrite",
    "a night whose manifest was lost committed other rows of it", "input file gone", "unchanged")


@dataclass(frozen=True, slots=True)  # one per input unit: a million of them make a big night
class Decision:
    """What the night does with one input unit, and why."""

    unit: str  # the input file or object group, relative to --input
    file: InputFile | None  # as listed tonight (None: gone from the input)
    action: str  # one of ACTIONS
    reason: str  # why (NEW, CHANGED, ROLLOUT...; AS_IS for a unit kept as it is)
    part: str | None  # the part that holds its rows after the night (DROP: the part leaving; None: it has none)
    model: str  # the key of the options its rows are made with after the night (job.night.options)
    salt: str = ""  # a part written tonight: its name's salt (the run's id: a name no earlier part had)
    record: dict | None = None  # ADOPT: the part's footer record
    live: bool = False  # ADOPT: the table's current version names the part already (a lost manifest's night)
    entry: TableFile | None = None  # the unit's entry in the table's snapshot (None: the table has none)

    @property
    def writes(self) -> bool:
        """Whether the engine (or the driver, for a file of no rows) writes the unit's part tonight."""
        return self.action in (SCORE, RESCORE)

    @property
    def in_table(self) -> bool:
        """Whether the unit has a part in the table after the night."""
        return self.action not in (DROP,) and self.part is not None

    @property
    def unread(self) -> bool:
        """Whether the final check takes the unit's facts from the snapshot instead of reading its part."""
        return self.action in (KEEP, WITHHELD, KEEP_REMOVED)

    @property
    def replaces(self) -> bool:
        """Whether the table held rows of the unit that tonight's part replaces (they leave by their lineage)."""
        return self.action in (SCORE, RESCORE, ADOPT) and self.entry is not None and self.part != self.entry.part
