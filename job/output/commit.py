"""A run's change to the table, as a table format commits it: what it adds, removes, retires and deletes.

``job.finish`` calls ``commit_run`` after the final check and before the manifest. The plain
Parquet folder (``--table-format parquet``) has no commit: the parts of input files gone are
deleted once the manifest is written, as always. A Delta or Iceberg table gets ONE commit
(``job.output.formats``): the parts the previous snapshot did not list are added, the parts it
listed that this run's table does not hold are removed. Removed parts are retired, not deleted:
an older version of the table still names them, so they stay readable for time travel until they
are ``--time-travel-days`` old; the snapshot lists them (``Snapshot.retired``) so that the next
night's bookkeeping knows them for no part of the table.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from job.config import JobConfig
from job.output.formats import Commit, TableAt, format_module
from job.output.table import Snapshot
from storage import Location, storage_errors

DAY_SECONDS = 86400


@dataclass(frozen=True)
class Committed:
    """What the commit left for the snapshot and for the tidy-up after the manifest."""

    number: int  # this run's number in the table
    version: int | None  # the table's version now (None: the plain folder)
    retired: dict[str, float]  # parts out of the table, kept for time travel: part -> when it left
    delete: tuple[str, ...]  # parts to delete once the manifest is written


def commit_run(output: Location, config: JobConfig, previous: Snapshot | None, table: Mapping[str, int],
               removed: Sequence[str], schema: pa.Schema, run_id: str) -> Committed:
    """Commit the run's table (``table``: part -> rows) in the configured format; ``removed``: parts of files gone."""
    number = previous.number + 1 if previous is not None else 1
    module = format_module(config.table_format, config.iceberg_catalog)
    if module is None:
        return Committed(number, None, {}, tuple(removed))
    listed = {entry.part for entry in previous.files.values()} if previous is not None else set()
    leaving = tuple(sorted(listed - set(table)))
    version = previous.version if previous is not None else None
    if leaving or set(table) - listed or version is None:
        change = Commit({part: rows for part, rows in table.items() if part not in listed}, leaving, schema, number,
                        run_id, config.time_travel_days)
        at = TableAt.of(output, config)
        version = module.commit(at, change)
        version = module.current_version(at) if version is None else version
    now = time.time()
    retired = {**(previous.retired if previous is not None else {}), **{part: now for part in leaving}}
    expired = {part for part, since in retired.items() if now - since >= config.time_travel_days * DAY_SECONDS}
    never_listed = [part for part in removed if part not in listed]  # a stopped run's parts of files since gone
    return Committed(number, version, {p: t for p, t in retired.items() if p not in expired},
                     tuple(sorted(set(never_listed) | _present(output, expired))))


def _present(output: Location, parts: set[str]) -> set[str]:
    """Of ``parts``, those still on storage (a retired part may have been deleted by hand)."""
    if not parts:
        return set()
    names = sorted(parts)
    with storage_errors(output.uri):
        infos = output.filesystem.get_file_info([output.join(name) for name in names])
    return {name for name, info in zip(names, infos) if info.type == pafs.FileType.File}
