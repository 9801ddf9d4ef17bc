"""A run's change to the table, as a table format commits it: what it adds, takes out, retires and deletes.

``job.night.finish`` calls ``commit_run`` after the final check and before the manifest. The plain
Parquet folder (``--table-format parquet``) has no commit: the parts of input files gone or
replaced are deleted once the manifest is written, as always. A Delta or Iceberg table gets at most ONE
commit (``job.night.formats``) on its latest version, whoever else committed since: the parts the
night wrote (and those it adopted that no version names) are added, less the rows another writer deleted
meanwhile, and the rows of the input files leaving the table go by their lineage, wherever other writers
moved them. Files the commit takes out are never deleted at once: an older version still names them. Those
this job wrote, and the strays of stopped nights, are retired (``Snapshot.retired``) and deleted once they
left the table ``--time-travel-days`` ago, unless the table's current version names one again; another
writer's are VACUUM's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

from job.config import JobConfig
from job.night.formats import Commit, TableAt, format_module
from job.night.formats.withheld import Watched, Withheld
from job.night.formats.by_source import REWRITTEN_PREFIX, Leaving
from job.output.parts import is_part_name
from job.night.record import Snapshot
from storage import Location, storage_errors

DAY_SECONDS = 86400


@dataclass(frozen=True)
class Committed:
    """What the commit left for the snapshot and for the tidy-up after the manifest."""

    number: int  # this run's number in the table
    version: int | None  # the table's version now (None: the plain folder)
    retired: dict[str, float]  # our files out of the table, kept for time travel: file -> when it left
    delete: tuple[str, ...]  # parts to delete once the manifest is written
    withheld: Mapping[str, Withheld] = field(default_factory=dict)  # parts committed without rows others deleted


@dataclass(frozen=True)
class TableChange:
    """What the night changes, as ``job.night.finish`` hands it over."""

    table: Mapping[str, int]  # every part of the table after the run -> its rows
    sources: Mapping[str, str]  # each of those parts, the previous snapshot's and the strays the log names -> its unit
    adds: Mapping[str, int] = field(default_factory=dict)  # parts the commit adds (written, or adopted uncommitted)
    removed: Sequence[str] = ()  # our parts no version of the table after the night keeps (a stopped night's)
    leaving: Leaving = field(default_factory=Leaving)  # a table's rows that leave it (of input files replaced or gone)
    overwrite: bool = False  # a table's --overwrite: every row of its current version leaves
    bounds: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # parts this run adds -> their sources' min, max
    watched: Mapping[str, Watched] = field(default_factory=dict)  # added parts whose rows others may have deleted
    planned_version: int | None = None  # the table's version the night planned on


def commit_run(output: Location, config: JobConfig, previous: Snapshot | None, change: TableChange, schema: pa.Schema,
               run_id: str) -> Committed:
    """Commit the run's ``change`` in the configured format (a plain folder: nothing to commit)."""
    number = previous.number + 1 if previous is not None else 1
    module = format_module(config.table_format, config.iceberg_catalog)
    if module is None:
        return Committed(number, None, {}, tuple(change.removed))
    listed = {entry.part for entry in previous.files.values()} if previous is not None else set()
    applied = module.commit(TableAt.of(output, config), Commit(
        change.adds, change.leaving, schema, number, run_id, config.time_travel_days, change.overwrite, change.sources,
        change.bounds, frozenset(change.table), change.watched, change.planned_version))
    number = applied.number or number
    now = time.time()
    # Ours that left the table: by this commit, or by another writer's since the snapshot (a compaction of our parts);
    # and the strays of stopped nights, which an older version may name. None is deleted before --time-travel-days,
    # nor while the table's current version names it.
    left = {name for name in applied.removed if _ours(name)} | (listed - set(change.table)) | set(change.removed)
    retired = {**(previous.retired if previous is not None else {}), **{name: now for name in sorted(left)}}
    retired = {name: since for name, since in retired.items() if name not in applied.live and name not in change.table}
    expired = {name for name, since in retired.items() if now - since >= config.time_travel_days * DAY_SECONDS}
    # The parts committed as files without withheld rows: no version names them.
    delete = _present(output, expired) | set(applied.withheld)
    return Committed(number, applied.version, {p: t for p, t in retired.items() if p not in expired},
                     tuple(sorted(delete)), applied.withheld)


def _ours(name: str) -> bool:
    """Whether this job wrote the data file ``name``: only those it ever deletes."""
    return is_part_name(name) or name.startswith(REWRITTEN_PREFIX)


def _present(output: Location, parts: set[str]) -> set[str]:
    """Of ``parts``, those still on storage (a retired part may have been deleted by hand, or vacuumed)."""
    if not parts:
        return set()
    names = sorted(parts)
    with storage_errors(output.uri):
        infos = output.filesystem.get_file_info([output.join(name) for name in names])
    return {name for name, info in zip(names, infos) if info.type == pafs.FileType.File}
