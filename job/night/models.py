"""Which options made a table's rows: answered once, for every entry of its snapshot; and the refusals of other ones.

A table's snapshot records, per input unit, the key of the options its rows were made with (``TableFile.made_by``;
none: the snapshot's ``made_by``, the run that wrote it), and the options of each key (``Snapshot.models``). A
manifest written before those fields had one set of options for every row: its ``output_options``. ``TableModels``
reads all three once; the plan, the final step and the manifest ask it, and nothing else.

A night whose options differ from those of rows it keeps is a rollout (``--rollout-files``) or refused, naming what
differs. Two option sets that name the same model (a rollout of ``--topk`` or ``--cpu-resize`` alone) are refused
with or without ``--rollout-files``: their rows would carry the same ``model`` lineage, so no reader could tell them
apart; ``--overwrite`` redoes the table in one new version instead. Options that change the table's columns
(``COLUMN_OPTIONS``) are never mixed in one table either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from job.errors import JobError
from job.night.manifest import Manifest
from job.night.options import difference_line, differing, model_label, options_key
from job.night.record import Snapshot, TableFile

# Options that change the table's columns, not only its rows' values: never mixed in one table, so never rolled out.
COLUMN_OPTIONS = frozenset({"layout", "predictions", "embeddings"})


@dataclass(frozen=True)
class TableModels:
    """The option sets a table's rows were made with, by key, and the key of entries that name none."""

    options: Mapping[str, dict] = field(default_factory=dict)  # key -> the options (job.output.parts.output_options)
    default: str | None = None  # the key of entries recording none: the options of the run that wrote the snapshot

    @classmethod
    def of(cls, snapshot: Snapshot | None, previous: Manifest | None) -> TableModels:
        recorded = dict(previous.output_options or {}) if previous is not None else {}
        options = dict(snapshot.models) if snapshot is not None else {}
        default = snapshot.made_by if snapshot is not None else None
        if default is None and recorded:
            default = options_key(recorded)
        if default is not None and default not in options and recorded:
            options[default] = recorded
        return cls(options, default)

    def key(self, entry: TableFile) -> str | None:
        """The key of the options ``entry``'s rows were made with."""
        return entry.made_by or self.default

    def options_of(self, key: str) -> dict:
        return dict(self.options.get(key) or {})


def refuse_other_options(where: str, recorded: Mapping | None, options: Mapping, rollout: bool) -> None:
    """Refuse (JobError) rows made with ``recorded`` in a table tonight writes with ``options``: ``rollout`` says whether
    --rollout-files was passed (then only what no rollout can mix is refused)."""
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    if set(differing(recorded, options)) & COLUMN_OPTIONS:
        raise JobError(f"{where}: the table's rows were made with other options ({difference_line(recorded, options)}), "
                       "which give it other columns; a table holds one set of columns, so no rollout can mix them: run "
                       "with the same options, or pass --overwrite to redo it all")
    if model_label(recorded) == model_label(options):
        raise JobError(f"{where}: the table's rows were made with other options of the same model "
                       f"({difference_line(recorded, options)}); rows of both would name the same model "
                       f"({model_label(options)}), so no reader could tell them apart: run with the same options, or "
                       "pass --overwrite to redo the table with these in one new version")
    if not rollout:
        raise JobError(f"{where}: the table's rows were made with other options ({difference_line(recorded, options)}); "
                       "run with the same options, pass --rollout-files N to score new files with these and re-score N "
                       "of the others a night, or --overwrite to redo it all")
