"""The output as one table: which input file each part holds, its ids, and what an incremental run redoes.

Every finished run's manifest carries the table's ``Snapshot``: for each input file (its path
relative to ``--input``) the part that holds it, the input's identity when that part was made
(size, modification time), and its rows and error rows. Beside the parts, ``_index/<run id>.ids``
(named by the snapshot) holds every part's ids as 64-bit hashes (``job.input.unique_ids.id_hashes``), 8 bytes an id.

An incremental run (``--incremental``) reads the last manifest, lists the input, and ``diff``s
the two: unchanged files keep their parts unread; added and changed files run; removed files
lose their parts (``--keep-removed`` keeps them). It checks the new files' ids against the
index, not against the old parts, and writes a new index and manifest; each run's manifest is
also kept as ``_history/<run id>.json``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field

from job.night.formats import TableState
from job.input.data_files import FileIdentity, unchanged
from job.input.plan import InputFile, InputPlan

HISTORY_DIR = "_history"  # <output>/_history/<run id>.json: every run's manifest


@dataclass(frozen=True, slots=True)  # one per file of the table: no __dict__ each
class TableFile:
    """One input file of the table, as its part was made."""

    part: str  # the part's name under the output prefix
    identity: FileIdentity | None  # the input file's version when the part was made (None: not known)
    rows: int
    errored: int
    removed: bool = False  # --keep-removed: the input file is gone, its part kept
    size: int | None = None  # the part's bytes as written (None: not recorded): a part cut short since is redone
    transient: int = 0  # error rows of a transient cause (a timed-out model call): the next --incremental redoes the file
    # An object group's objects whose rows another writer deleted from the table (a DELETE by key), left out of its part
    # while they stay as they were: (key, size, mtime_ns, ctime_ns) each (job.night.deleted_objects).
    withheld: tuple[tuple[str, int, int | None, int | None], ...] = ()
    made_by: str | None = None  # the key of the options its rows were made with (job.night.options); None: the table's
    made_in: int = 0  # the number of the run that made its part (0: not recorded): a rollout re-scores the oldest first
    # Rows of its part left out of the table because another writer deleted them while the night re-scored the file
    # (job.night.formats.withheld): the table holds rows - taken of it.
    taken: int = 0

    def to_dict(self) -> dict:
        """As the manifest records it: the identity's size and mtime_ns (and a group's members digest) beside the rest."""
        identity = self.identity or FileIdentity(0, None)
        record = {"part": self.part, **identity.to_dict(), "rows": self.rows, "errored": self.errored,
                  "removed": self.removed, "part_size": self.size, "transient": self.transient, "made_in": self.made_in}
        if self.withheld:  # rare (privacy deletes): a million files' manifest carries no empty list each
            record["withheld"] = [list(entry) for entry in self.withheld]
        if self.made_by is not None:  # a rollout's files still on another model than the table's
            record["made_by"] = self.made_by
        if self.taken:
            record["taken"] = self.taken
        return record

    @classmethod
    def from_dict(cls, data: Mapping) -> TableFile:
        return cls(data["part"], FileIdentity.from_dict(data), data["rows"], data["errored"], data.get("removed", False),
                   data.get("part_size"), data.get("transient", 0), tuple(tuple(e) for e in data.get("withheld", ())),
                   data.get("made_by"), data.get("made_in", 0), data.get("taken", 0))


@dataclass(frozen=True)
class Delta:
    """What a run did to the table, by input file (paths relative to --input)."""

    added: tuple[str, ...] = ()  # new input files: their parts were written
    replaced: tuple[str, ...] = ()  # changed input files: their parts were written again
    removed: tuple[str, ...] = ()  # input files gone: their parts deleted
    kept_removed: tuple[str, ...] = ()  # input files gone, their parts kept (--keep-removed)

    @property
    def empty(self) -> bool:
        return not (self.added or self.replaced or self.removed)


@dataclass(frozen=True)
class Snapshot:
    """The table a finished run left: recorded in its manifest (``table``)."""

    files: dict[str, TableFile]  # input file (relative to --input) -> its part
    columns: dict  # the input's id column, shape columns, id hashing: new files must agree
    index: str | None  # the ids index beside the parts (INDEX_DIR/<run id>.parquet)
    delta: Delta = field(default_factory=Delta)  # what the run that wrote it changed
    number: int = 1  # the run's number in this table (1: the first run): a table format's commits are numbered by it
    version: int | None = None  # the Delta/Iceberg table's version after the run's commit (None: the plain folder)
    # Parts a table format's commits took out of the table, kept for time travel: part -> when (Unix seconds).
    # They are no part of the table: deleted once older than --time-travel-days (job.night.commit).
    retired: dict[str, float] = field(default_factory=dict)
    # The options each model in the table was run with, by key (job.night.options): one outside a rollout.
    models: dict[str, dict] = field(default_factory=dict)
    made_by: str | None = None  # the key of the files that name none (``TableFile.made_by``): the last run's options

    @property
    def state(self) -> TableState:
        """What a table format checks against: our last commit's number and the version it made."""
        return TableState(self.number, self.version)

    def to_dict(self, entries: bool = True) -> dict:
        """As the manifest records it; ``entries=False``: each file's entry left a ``TableFile``, for an encoder that
        makes each its dict as it writes it (``job.night.manifest.write_manifest``)."""
        files = {name: f.to_dict() for name, f in self.files.items()} if entries else self.files
        return {"files": files, "columns": self.columns,
                "index": self.index, "delta": {kind: list(names) for kind, names in asdict(self.delta).items()},
                "number": self.number, "version": self.version, "retired": self.retired, "models": self.models,
                "made_by": self.made_by}

    @classmethod
    def from_dict(cls, data: Mapping) -> Snapshot:
        delta = {k: tuple(v) for k, v in data.get("delta", {}).items()}
        return cls({name: TableFile.from_dict(f) for name, f in data["files"].items()}, dict(data["columns"]), data.get("index"),
                   Delta(**delta), data.get("number", 1), data.get("version"), dict(data.get("retired", {})),
                   dict(data.get("models", {})), data.get("made_by"))

    def model_of(self, entry: TableFile) -> str | None:
        """The key of the options ``entry``'s rows were made with (None: a snapshot that records no models)."""
        return entry.made_by or self.made_by


def columns_record(plan: InputPlan) -> dict:
    """The input's columns as a snapshot records them; an incremental run's new files must match."""
    return {"id_column": plan.id_column, "shape_columns": plan.shape_columns, "ids_as_text": plan.ids_as_text}


def diff(snapshot: Snapshot | None, planned: Mapping[str, InputFile], kept_removed: Collection[str] = ()) -> Delta:
    """What a run over ``planned`` (relative path -> file) does to the table ``snapshot`` left.

    ``kept_removed``: the input files gone whose parts the run keeps (--keep-removed); the other files gone are removed.
    """
    before = snapshot.files if snapshot is not None else {}
    added = tuple(sorted(name for name in planned if name not in before))
    replaced = tuple(sorted(name for name, f in planned.items() if name in before and not unchanged(before[name].identity, f.identity)))
    gone = sorted(name for name in before if name not in planned)
    return Delta(added, replaced, tuple(n for n in gone if n not in kept_removed), tuple(n for n in gone if n in kept_removed))
