"""Parts of ours under the prefix that the table's snapshot does not list: a stopped night's, or a lost manifest's.

A night killed before its manifest leaves whole parts behind; one killed between its commit and its manifest leaves
parts that the table's log already names, though no manifest does. The next night (``job.night.plan``) reads their
footers (a stopped night's parts: a few) and

- adopts a stray part that proves a file it would otherwise score: the same input file as listed now, every row, made
  with tonight's options (``Strays.proving``); its rows are not scored again, and a part the log already names
  (``Stray.live``) is not committed again;
- scores again, under a name no earlier part had, a file whose stray part does not prove it, and says why (``notes``);
- on a Delta or Iceberg table, takes out the rows of a live stray it does not adopt (a lost night's rows of a file
  tonight scores otherwise), by their lineage, as a replaced file's rows leave; and re-scores the input file of a
  live stray whatever the snapshot says of it, since the snapshot no longer says what the table holds of it;
- never deletes a stray a version of a shared table may name: there they leave by the retired list
  (``job.night.commit``), deleted once ``--time-travel-days`` passed; on the plain folder, after the manifest.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from job.errors import JobError
from job.input.data_files import FileIdentity, unchanged
from job.input.plan import InputFile
from job.night.held import UNREADABLE, Held
from job.night.options import difference_line, options_key
from storage import Location


@dataclass(frozen=True)
class Stray:
    """A part of ours under the prefix that the snapshot does not list."""

    name: str
    rows: int  # as its footer says (-1: unreadable)
    record: dict | None  # its footer record (job.output.parts): input file, identity, options, run
    live: bool  # the table's current version names it: a night whose manifest was lost committed it

    @property
    def unit(self) -> str | None:
        """The input file or object group (relative to --input) whose rows it holds; None: unreadable, or no record."""
        return (self.record or {}).get("input_file")

    def proves(self, file: InputFile, target: str) -> bool:
        """Whether it holds every row of ``file`` as listed now, made with the options whose key is ``target``."""
        record = self.record or {}
        return (self.rows == file.rows and unchanged(FileIdentity.from_dict(record.get("identity")), file.identity)
                and record.get("options") is not None and options_key(record["options"]) == target)

    def made_otherwise(self, file: InputFile, target: str) -> bool:
        """Whether it holds every row of ``file`` as listed now, made with other options than ``target``'s."""
        record = self.record or {}
        return (self.rows == file.rows and unchanged(FileIdentity.from_dict(record.get("identity")), file.identity)
                and record.get("options") is not None and options_key(record["options"]) != target)

    def why_not(self, file: InputFile, options: Mapping) -> str:
        """Why it does not prove ``file`` under ``options``, for the note the night prints."""
        record = self.record or {}
        if (self.rows, self.record) == UNREADABLE:
            return "the part cannot be read (cut short or damaged)"
        if record.get("options") is not None and self.rows == file.rows and unchanged(
                FileIdentity.from_dict(record.get("identity")), file.identity):
            return f"made with other options ({difference_line(record['options'], options)})"
        listed = file.identity.to_dict() if file.identity is not None else None
        return (f"its input file changed since the part was written ({self.rows} rows, now {file.rows}; "
                f"{record.get('identity')}, now {listed})")


@dataclass(frozen=True)
class Strays:
    """The stray parts under the prefix, by the input unit they hold."""

    by_unit: Mapping[str, tuple[Stray, ...]] = field(default_factory=dict)
    others: tuple[Stray, ...] = ()  # of no unit: unreadable, or written before footers named their file

    @property
    def names(self) -> frozenset[str]:
        return frozenset(s.name for group in self.by_unit.values() for s in group) | {s.name for s in self.others}

    @property
    def live_units(self) -> frozenset[str]:
        """The units a live stray holds rows of: the table holds those, whatever the snapshot says."""
        return frozenset(unit for unit, group in self.by_unit.items() if any(s.live for s in group))

    def proving(self, unit: str, file: InputFile, target: str) -> Stray | None:
        """The stray that proves ``file`` (the unit ``unit``) under ``target``: a live one first, then by name."""
        fit = [s for s in self.by_unit.get(unit, ()) if s.proves(file, target)]
        return min(fit, key=lambda s: (not s.live, s.name), default=None)

    def live_of(self, unit: str) -> tuple[Stray, ...]:
        return tuple(s for s in self.by_unit.get(unit, ()) if s.live)

    def require_same_options(self, unit: str, file: InputFile, options: Mapping, output: Location) -> None:
        """Without --rollout-files: refuse (JobError) a stray part of ``unit`` made from ``file`` as it is, with other
        options than tonight's: a night run again with other options is a rollout, or a mistake."""
        target = options_key(options)
        other = next((s for s in self.by_unit.get(unit, ()) if s.made_otherwise(file, target)), None)
        if other is not None:
            raise JobError(f"{output.uri_of(output.join(other.name))} was written with other options "
                           f"({difference_line(other.record['options'], options)}); run with the same options, pass "
                           "--rollout-files N to re-score it with these, or --overwrite to redo it all")


def read_strays(held: Held, listed: Collection[str], shared: bool) -> Strays:
    """The parts under the prefix that ``listed`` (the snapshot's parts) does not name, their footers read; on a shared
    table, which of them its current version names."""
    names = sorted(held.parts - set(listed))
    if not names:
        return Strays()
    live = {f.path for f in held.data_files()} if shared else set()
    by_unit: dict[str, list[Stray]] = {}
    others = []
    for name, (rows, record) in held.footers(names).items():
        stray = Stray(name, rows, record, name in live)
        if stray.unit is None:
            others.append(stray)
        else:
            by_unit.setdefault(stray.unit, []).append(stray)
    return Strays({unit: tuple(group) for unit, group in by_unit.items()}, tuple(others))
