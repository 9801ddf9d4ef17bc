"""Rows another writer deleted from a shared table while a night re-scored their input: withheld from its commit.

A privacy DELETE by source (``DELETE WHERE source_file = 'a.parquet'``) or by id may land at any moment of a night
that lasts hours: before the night planned (a rollout then picks a file the table holds only some rows of), or after,
while the engine scores the file again. A commit of the night's new part as written would put the deleted rows back.
So in the commit's retry loop, on the very version the commit applies to (read again after every conflict), each part
the night adds for an input unit whose rows the table held (``Watched``) is held against the table:

- an input unit as it was (re-scored: a rollout, rows that timed out): each id of the night's part that the table
  holds no row of now is withheld, whenever the DELETE came;
- a changed input file: each id whose row the table held when the night planned (``Watched.before``, read then) and
  holds no more (deleted after the plan: the file's new rows are its own, but a DELETE that came during the night wins).

A part with ids withheld is written again without them (``by_source.write_rewritten``) and that file is committed in
its place; the part, which no version names, is deleted after the manifest. The table's snapshot counts the rows each
input unit withholds (``TableFile.taken``); the ids index keeps their hashes, so the unit's next re-scoring withholds
them again by the same rule while the input stays as it is. The table is read only where it must be: units the table
held whole at the plan, on a version no one changed since, need no read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from job.night.formats.by_source import DataFile, Leaving, ids_within, read_columns, write_rewritten
from storage import Location


@dataclass(frozen=True)
class Watched:
    """A unit whose rows the table held when the night planned, and which a part the night adds replaces."""

    unit: str  # the input file or object group, relative to --input
    rows: Leaving  # its rows in the table, by their source_file
    unchanged: bool  # the input is as the table's rows were made from it (re-scored); False: the file changed
    whole: bool = True  # at the plan's version the table held every row the unit's last night committed
    before: frozenset[str] = frozenset()  # a changed file: the ids the table held rows of when the night planned


@dataclass(frozen=True)
class Withheld:
    """The file a part was committed as, without the rows another writer deleted."""

    name: str  # the rewritten file, committed in the part's place
    rows: int  # its rows
    taken: int  # the part's rows left out
    errored: int  # of those, error rows


def withhold(output: Location, now: Sequence[DataFile], moved: bool, watched: Mapping[str, Watched], run_id: str,
             schema: pa.Schema) -> dict[str, Withheld]:
    """The parts (of ``watched``: part -> its unit) that must leave ids out, each written again without them.

    ``now``: the data files of the version the commit applies to, less the night's own parts; ``moved``: whether anyone
    committed since the night planned (if not, only the units not whole at the plan are read).
    """
    asked = {part: w for part, w in watched.items() if moved or (w.unchanged and not w.whole)}
    if not asked:
        return {}
    present = ids_within(output, now, {part: w.rows for part, w in asked.items()})
    written = {}
    for part, w in sorted(asked.items()):
        table = read_columns(output, part)
        ids = table.column("id")
        out = w.before - present[part] if not w.unchanged else None
        leaving = (pc.invert(pc.is_in(ids, pa.array(sorted(present[part]), ids.type))) if out is None
                   else pc.is_in(ids, pa.array(sorted(out), ids.type)))
        leaving = pc.fill_null(leaving, False)
        taken = table.filter(leaving)
        if taken.num_rows:
            name, rows = write_rewritten(output, table.filter(pc.invert(leaving)), run_id, schema)
            written[part] = Withheld(name, rows, taken.num_rows, taken.num_rows - taken.column("error").null_count)
    return written
