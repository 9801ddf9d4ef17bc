"""What a night's plan asks of the output before any work: ``begin_night``.

Once the plan is decided (``job.night.plan``) and before the engine runs a file: a rollout on the plain folder must
keep its columns; an ``--overwrite`` of a plain folder clears it; any other night clears the temporaries a killed run left (``_staging/``); the plan's notes (a
part redone, and why) are said; and the new files' ids are held against the ids the table keeps
(``job.night.new_ids``), so a repeat is refused in one line before any image is decoded.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.parquet as pq

from job.config import JobConfig
from job.errors import JobError
from job.night.held import Held, clear, clear_staging
from job.night.new_ids import check_new_ids
from job.night.decision import ADOPT, CHANGED, NEW, SCORE
from job.night.plan import AS_THEY_WERE, NightPlan
from storage import storage_errors


def begin_night(night: NightPlan, held: Held, config: JobConfig, schema: pa.Schema) -> None:
    """Refuse what the night may not do (``check_night``), then clear what the plan clears and say its notes.

    ``schema``: what tonight's parts hold (``job.output.parts.Parts.table_schema``).
    """
    check_night(night, held, config, schema)
    if night.clear:
        clear(night.output, held)
    elif not night.done:
        clear_staging(night.output)  # temporaries of a killed run
    for note in night.notes:
        print(note, file=sys.stderr)


def check_night(night: NightPlan, held: Held, config: JobConfig, schema: pa.Schema) -> None:
    """What the plan asks of the output that only reading it can refuse (JobError): the columns a rollout keeps, and a
    new id the table already holds. Writes nothing: a dry run asks it too."""
    _require_columns_kept(night, schema)
    snapshot = night.snapshot
    if snapshot is None or snapshot.index is None or config.skip_id_check:
        return
    # The table's ids after tonight: those of the units it keeps, and of those re-scored as they are (a rollout, rows that
    # timed out): every new or changed file's ids are held against them before any image is decoded.
    new = [d.file for d in night.decisions if d.file is not None and d.file.rows and d.reason in (NEW, CHANGED)
           and d.action in (SCORE, ADOPT)]
    if new:
        kept = {d.unit: d.entry.part for d in night.decisions if d.entry is not None and (
            d.unread or d.reason in AS_THEY_WERE)}
        listed = {d.unit: d.file for d in night.decisions if d.unit in kept and d.file is not None}
        check_new_ids(night.input, new, night.output, held.id_index(), kept, listed)


def _require_columns_kept(night: NightPlan, schema: pa.Schema) -> None:
    """A rollout on the plain folder: tonight's parts must hold the columns of those it keeps on another model (an
    embedding of another size is another column type: the folder would not read as one table). A Delta or Iceberg
    table compares its own columns (``job.night.formats.require_table``)."""
    if night.shared or not night.made_by:
        return
    part = min(night.made_by)
    where = night.output.join(part)
    with storage_errors(night.output.uri_of(where)), night.output.filesystem.open_input_file(where) as f:
        theirs = pq.ParquetFile(f).schema_arrow
    if [(c.name, c.type) for c in theirs] != [(c.name, c.type) for c in schema]:
        raise JobError(f"{night.output.uri_of(where)} holds other columns than tonight's parts would "
                       f"({', '.join(f'{c.name}: {c.type}' for c in theirs if c not in schema)[:200]}): a rollout keeps "
                       "the table's columns (another model's embedding size changes them); pass --overwrite to redo it all")
