"""Why a night scored the images it scored: new files, changed files, a rollout's re-score, rows that timed out.

A manifest records what the night did to the table (its snapshot's ``delta``) and, per input file, the run that made
its part (``made_in``) and the model (``made_by``), but not, file by file, why it ran. What it ran is read back from
those: a file the night wrote and did not adopt (a stopped run's part, ``job.night.stopped_runs``) was scored, and
why follows from the delta and from the previous finished night's snapshot (the file on another model then: a
rollout; with timed-out rows then: their retry). Used by ``read_nights`` (``job.costs.history``) for each night.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping

NEW, CHANGED, ROLLOUT, TIMED_OUT, OVERWRITE, REDONE = "new", "changed", "rollout", "timed out", "overwrite", "redone"
# Scored rows no file entry accounts for: a manifest written before parts recorded the run that made them.
NOT_RECORDED = "not recorded"
REASONS = (NEW, CHANGED, ROLLOUT, TIMED_OUT, OVERWRITE, REDONE, NOT_RECORDED)  # the order lines and charts use

# A table's files as the next night compares them: input file -> (the key of the model that made it, timed-out rows).
FileStates = dict[str, tuple[str | None, int]]


def file_states(record: Mapping) -> FileStates | None:
    """What the next night needs of this finished night's snapshot (None: the manifest has no table record)."""
    table = record.get("table")
    if not table:
        return None
    default = table.get("made_by")
    return {name: (entry.get("made_by") or default, entry.get("transient", 0)) for name, entry in table["files"].items()}


def scored_by_reason(record: Mapping, previous: FileStates | None, adopted: Collection[str]) -> dict[str, int]:
    """The rows ``record``'s night scored, by reason (``REASONS``' order, none of 0); ``previous``: the finished night
    before it (``file_states``; None: the first, or not known); ``adopted``: parts it adopted from stopped runs."""
    scored = record.get("input_files", {}).get("rows_run", 0)
    table = record.get("table")
    counts: Counter[str] = Counter()
    if table:
        number, target = table.get("number", 1), table.get("made_by")
        delta = table.get("delta", {})
        added, replaced = set(delta.get("added", ())), set(delta.get("replaced", ()))
        overwrite = bool(record.get("config", {}).get("overwrite"))
        for name, entry in table["files"].items():
            if entry.get("made_in") == number and entry["part"] not in adopted and not entry.get("removed"):
                counts[_why(name, added, replaced, overwrite, previous, target)] += entry["rows"]
    left = scored - sum(counts.values())
    if left > 0:
        counts[NOT_RECORDED] += left
    return {reason: counts[reason] for reason in REASONS if counts[reason]}


def _why(name: str, added: set[str], replaced: set[str], overwrite: bool, previous: FileStates | None,
         target: str | None) -> str:
    if overwrite:
        return OVERWRITE
    if name in added:
        return NEW
    if name in replaced:
        return CHANGED
    key, transient = (previous or {}).get(name, (None, 0))
    if key is not None and target is not None and key != target:
        return ROLLOUT
    return TIMED_OUT if transient else REDONE  # REDONE: its part had gone missing, or a stopped night's was not whole
