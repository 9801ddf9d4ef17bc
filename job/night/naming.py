"""How a part the night writes is named, and what the night says of the stray parts it does not adopt.

A part's name depends on its input file and that file's version (``job.output.parts.part_name``), so that a retried
task writes the same part again. A part the night writes must never take the name of one that exists or that a
version of a shared table names (an older version's readers would read other bytes, and a retired part would be
deleted while live): a file scored again as it is (a rollout, rows that timed out) gets a name salted by the run's id,
a name no earlier part had; a new or changed file keeps its plain name unless a part already has it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from job.input.data_files import input_relpath
from job.input.plan import InputFile, InputPlan
from job.night.decision import SCORE, Decision
from job.night.record import TableFile
from job.night.strays import Strays
from job.output.parts import file_part_name


def new_part(plan: InputPlan, file: InputFile, reason: str, salt: str, taken: Collection[str], target: str,
             action: str = SCORE, run_id: str = "", entry: TableFile | None = None) -> Decision:
    """A decision to score ``file``, its part named with ``salt``, or, when no salt is given and a part has the plain
    name already (``taken``), with ``run_id``."""
    root = plan.location.path
    name = file_part_name(root, file, salt)
    if name in taken and run_id and not salt:
        salt, name = run_id, file_part_name(root, file, run_id)
    return Decision(input_relpath(root, file.path), file, action, reason, name, target, salt, entry=entry)


def stray_notes(strays: Strays, unit: str, file: InputFile, options: Mapping) -> list[str]:
    """Why each stray part of ``unit`` is not adopted, as the night says it."""
    return [f"{s.name}: {s.why_not(file, options)}: running its input file again" for s in strays.by_unit.get(unit, ())]
