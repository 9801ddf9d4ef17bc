"""The driver side of the output prefix: what it holds, and what this run may do with it.

An output prefix holds::

    part-<stem>-<8 hex>.parquet   one per input file, with every row of that file (job.output.parts)
    _SUCCESS.json                 written last, after every part was verified (job.night.manifest): the table's snapshot
    _index/<run id>.ids           the table's ids as hashes, named by the manifest (job.night.record)
    _history/<run id>.json        every finished run's manifest
    _staging/...                  temporaries (local part writes, SageMaker shards): never read
    _lease.json                   while a run writes the prefix: who, until when (job.lease.lease)
    _delta_log/ or metadata/      --table-format delta / iceberg: the table format's own files (job.night.formats)

Before any work the driver reads what the prefix holds, once (``read_held``: our files, the
committed parts, the manifest and the table's snapshot it records), and ``job.night.plan``
decides from it what the run keeps, adopts, runs and removes. Files this job does not write are
never deleted: a prefix holding any is refused. The caller holds the prefix's lease
(``job.driver``), so no other run changes it meanwhile; ``--overwrite`` clears everything but that
lease (``clear``). ``Held`` also reads, once a run and only when asked, the footers of some parts and
the table's ids index (``footers``, ``id_index``): the plan and the final check ask for them.
``job.night.check`` checks the parts after the work.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from job.errors import JobError
from job.lease.lease import LEASE_NAME
from job.night.manifest import MANIFEST, Manifest, read_manifest
from job.output.parts import PART_PREFIX, PART_SUFFIX, STAGING, is_part_name, read_part_record
from job.input.plan import FOOTER_READ_THREADS
from job.night.formats import FOLDERS, TableFiles
from job.input.objects import is_group_name, key_ranges
from job.night.formats.by_source import DataFile, Leaving, ids_within, rows_within
from job.night.nesting import refuse_holding_another
from job.ids.hashing import ID_HASH_VERSION
from job.ids.index import IdIndex
from job.ids.segment import INDEX_DIR
from job.night.record import HISTORY_DIR, Snapshot
from storage import Location, storage_errors
from storage.parallel import map_in_order

Footer = tuple[int, "dict | None"]  # a committed part's rows and footer record (job.output.parts.read_part_record)
UNREADABLE: Footer = (-1, None)  # a part whose footer cannot be read: cut short or damaged


@dataclass(frozen=True)
class Held:
    """What the output prefix holds, read once before the night is decided (``read_held``)."""

    output: Location  # the prefix
    files: tuple[str, ...] = ()  # every file of ours under it (relative names), this run's lease aside
    parts: frozenset[str] = frozenset()  # the committed parts directly under it
    finished: Manifest | None = None  # its manifest, when a run finished there (read for --resume and --incremental)
    snapshot: Snapshot | None = None  # the table that manifest records (None: none, or an older version's manifest)
    sizes: Mapping[str, int] = field(default_factory=dict)  # the committed parts' sizes, as listed
    # A Delta or Iceberg table's data files at its latest version, as its log lists them (None: the plain folder).
    log: Callable[[], TableFiles] | None = field(default=None, compare=False, repr=False)
    # What was read of it once a run, by name: parts' footers, the ids index (its segments' footers and filters), the log.
    _footers: dict[str, Footer] = field(default_factory=dict, compare=False, repr=False)
    _indexes: dict[str, IdIndex] = field(default_factory=dict, compare=False, repr=False)
    _log: list[TableFiles] = field(default_factory=list, compare=False, repr=False)

    @property
    def uri(self) -> str:
        return self.output.uri

    def footers(self, names: Sequence[str]) -> dict[str, Footer]:
        """The footers of the committed parts ``names`` (``read_footers``), each read once a run."""
        unread = [name for name in names if name not in self._footers]
        if unread:
            self._footers.update(read_footers(self.output, unread))
        return {name: self._footers[name] for name in names}

    def data_files(self) -> list[DataFile]:
        """The table's data files at its latest version, read once a run (none for the plain folder): the version the
        night plans on (``log_version``)."""
        return self._listing().files

    @property
    def log_version(self) -> int | None:
        """Which version of the table ``data_files`` lists (Delta's number, Iceberg's snapshot id; None: no table)."""
        return self._listing().version

    def _listing(self) -> TableFiles:
        if not self._log:
            self._log.append(self.log() if self.log is not None else TableFiles())
        return self._log[0]

    def rows_of(self, names: Sequence[str]) -> dict[str, int]:
        """How many rows the table holds now of each of the snapshot's input files ``names``: all it committed while its
        part is in the table as written; else as many as the files that may hold its rows hold (another writer's
        compaction moved them, a DELETE took some out), read where the log's statistics leave room for them."""
        files, entries = self.data_files(), {name: self.snapshot.files[name] for name in names}
        listed = {file.path for file in files}
        ranges = key_ranges(self.snapshot.files) if any(is_group_name(name) for name in names) else {}
        moved = {name: Leaving(frozenset({name}), (ranges[name],) if name in ranges else ())
                 for name, entry in entries.items() if entry.part not in listed}
        counted = rows_within(self.output, [f for f in files if f.path not in {e.part for e in entries.values()}], moved)
        return {name: counted.get(name, entry.rows - entry.taken) for name, entry in entries.items()}

    def ids_of(self, units: Mapping[str, Leaving]) -> dict[str, frozenset[str]]:
        """The ids the table holds now of each unit (``units``: name -> its rows by source), read where the log's
        statistics leave room for them."""
        return {name: frozenset(ids) for name, ids in ids_within(self.output, self.data_files(), units).items()}

    def id_index(self) -> IdIndex:
        """The ids index of the snapshot's table, read once a run, in this version's id hash."""
        name = self.snapshot.index
        if name not in self._indexes:
            index = IdIndex.read(self.output, name)
            if index.hash_version != ID_HASH_VERSION:  # written before the hash's fix; the index is the previous table's
                parts = {file: entry.part for file, entry in self.snapshot.files.items()}
                index = index.remade(parts, self.snapshot.columns["ids_as_text"])
            self._indexes[name] = index
        return self._indexes[name]


def read_held(location: Location, read_manifest_too: bool, shared: bool = False, overwrite: bool = False,
              log: Callable[[], TableFiles] | None = None) -> Held:
    """What the prefix holds, and its manifest when ``read_manifest_too`` (``overwrite``: one that cannot be read is
    no manifest, as --overwrite replaces it).

    ``shared``: a Delta or Iceberg table, which other writers commit to: their files are expected (the
    format's log says what the table holds), and only parts named as ours are ours. A plain folder holding
    a file this job did not write is refused.
    """
    with storage_errors(location.uri):
        # The lease is this run's (the caller took it): not output, never cleared by --overwrite.
        listed = _files(location, refuse_foreign=not shared)
        names = tuple(n for n in listed if n != LEASE_NAME)
    if shared:
        names = tuple(n for n in names if n.startswith(_OURS) and ("/" in n or is_part_name(n)) or n == MANIFEST)
    parts = frozenset(n for n in names if "/" not in n and n.startswith(PART_PREFIX) and n.endswith(PART_SUFFIX))
    finished = None
    if read_manifest_too and MANIFEST in names:
        try:
            finished = finished_manifest(location)
        except JobError:
            if not overwrite:
                raise
    snapshot = finished.table if finished is not None else None
    if snapshot is not None:  # parts a table format's commit removed, kept for time travel: no part of the table
        parts = parts - set(snapshot.retired)
    return Held(location, names, parts, finished, snapshot, {name: listed[name] for name in parts}, log)


def read_footers(location: Location, names: Sequence[str]) -> dict[str, Footer]:
    """The footers (rows, record) of the committed parts ``names``, read in parallel; a part whose bytes are no
    Parquet (cut short, damaged) is ``UNREADABLE``: the night runs its file again."""
    return dict(zip(names, map_in_order(lambda name: _footer(location, name), names,
                                        threads=min(FOOTER_READ_THREADS, len(names)))))


def _footer(location: Location, name: str) -> Footer:
    try:
        return read_part_record(location, name)
    except ValueError:  # pyarrow's ArrowInvalid: no Parquet footer there
        return UNREADABLE


def clear(location: Location, held: Held) -> None:
    """--overwrite: delete every file of ours, the manifest first, so readers stop trusting the prefix before its parts go."""
    with storage_errors(location.uri):
        for name in sorted(held.files, key=lambda n: n != MANIFEST):
            location.filesystem.delete_file(location.join(name))


_OURS = (STAGING + "/", PART_PREFIX, INDEX_DIR + "/", HISTORY_DIR + "/", *(f"{folder}/" for folder in FOLDERS.values()))


def _files(location: Location, refuse_foreign: bool) -> dict[str, int]:
    """The files under the prefix (relative names, sorted) and their sizes; with ``refuse_foreign``, raise if any is not
    ours."""
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True, allow_not_found=True))
    sizes = dict(sorted((os.path.relpath(i.path, location.path), i.size) for i in infos if i.type == pafs.FileType.File))
    names = list(sizes)
    refuse_holding_another(location, names)  # another job's table below this one, named as such
    foreign = [n for n in names if not (n in (MANIFEST, LEASE_NAME) or n.startswith(_OURS))]
    if foreign and refuse_foreign:
        raise JobError(f"{location.uri} holds files this job did not write (e.g. {foreign[0]}); choose an empty --output")
    return sizes


def finished_manifest(location: Location) -> Manifest:
    """The manifest a finished run left; one line and the fix when it cannot be read."""
    where = location.uri_of(location.join(MANIFEST))
    try:
        return read_manifest(location)
    except ValueError as e:
        raise JobError(f"{where}: {e}; pass --overwrite to start over") from e


def list_parts(location: Location) -> list[str]:
    """Names of the committed parts directly under the output prefix."""
    with storage_errors(location.uri):
        infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, allow_not_found=True))
    names = (posixpath.basename(i.path) for i in infos if i.type == pafs.FileType.File)
    return sorted(n for n in names if n.startswith(PART_PREFIX) and n.endswith(PART_SUFFIX))


def clear_staging(location: Location) -> None:
    """Delete ``<output>/_staging`` (temporaries of failed or finished writes), if there is one."""
    path = location.join(STAGING)
    with storage_errors(location.uri_of(path)):
        if location.filesystem.get_file_info(path).type == pafs.FileType.Directory:
            location.filesystem.delete_dir(path)
