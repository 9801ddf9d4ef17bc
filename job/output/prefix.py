"""The driver side of the output prefix: what it holds, and what this run may do with it.

An output prefix holds::

    part-<stem>-<8 hex>.parquet   one per input file, with every row of that file (job.output.parts)
    _SUCCESS.json                 written last, after every part was verified (job.manifest): the table's snapshot
    _index/<run id>.parquet       the table's ids as hashes, named by the manifest (job.output.table)
    _history/<run id>.json        every finished run's manifest
    _staging/...                  temporaries (local part writes, SageMaker shards): never read
    _lease.json                   while a run writes the prefix: who, until when (job.lease.lease)

Before any work, ``prepare_output`` decides what an existing prefix means for this run:
- empty (or absent): every planned input file runs;
- finished (a manifest): ``--incremental`` keeps the part of every input file unchanged since
  (the manifest's snapshot says so; the part is not read), runs the added and changed ones, and
  drops the parts of files gone (``removed``); ``--resume`` has nothing to do (the job returns the
  manifest and exits 0, so a scheduler's retry of a finished job is a no-op); ``--overwrite``
  clears it for a full run; anything else is refused;
- partial (parts, no manifest: an earlier run was killed): refused, unless ``--overwrite``, or
  ``--resume``/``--incremental``, which keep each part whose footer says it holds every planned row
  of the same version of its input file (size, modification time), and run only the other files.
The options the kept parts were made with are checked once the run's plan is decided
(``require_same_options``). Files this job does not write are never deleted: a prefix holding
any is refused. The caller holds the prefix's lease (``job.driver``), so no other run changes it
meanwhile; ``--overwrite`` clears everything but that lease. ``job.output.verify`` checks the parts after the work.
"""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from job.config import JobConfig
from job.errors import JobError
from job.lease.lease import LEASE_NAME
from job.manifest import MANIFEST, Manifest, read_manifest
from job.output.parts import PART_PREFIX, PART_SUFFIX, STAGING, read_part_record
from job.input.plan import FOOTER_READ_THREADS, InputFile
from job.output.table import HISTORY_DIR, INDEX_DIR, Snapshot
from storage import Location, storage_errors

@dataclass(frozen=True)
class OutputState:
    finished: Manifest | None = None  # the finished run this one continues (--incremental) or finds done (--resume)
    # The committed parts this run keeps (name -> footer record; None: kept unread, the snapshot vouches
    # for it); their input files are not run again.
    kept: Mapping[str, dict | None] = field(default_factory=dict)
    removed: tuple[str, ...] = ()  # parts of input files no longer planned: deleted once the new manifest is written


def prepare_output(location: Location, config: JobConfig, planned: Mapping[str, InputFile],
                   previous: Manifest | None = None) -> OutputState:
    """Refuse, clear, or keep what the output prefix holds (see the module docstring); the caller holds its lease.

    ``planned``: each planned input file by its part's name; ``previous``: the finished run an
    incremental run continues (its manifest, already read by the caller), else None.
    """
    with storage_errors(location.uri):
        # The lease is this run's (the caller took it): not output, never cleared by --overwrite.
        names = [n for n in _our_files(location) if n != LEASE_NAME]
    if not names:
        return OutputState()
    if config.overwrite:
        _delete(location, names)
        return OutputState()
    if MANIFEST in names:
        return _continued(location, planned, previous) if config.incremental else _finished(location, config)
    if not (config.resume or config.incremental):
        count = sum(n.startswith(PART_PREFIX) for n in names)
        raise JobError(f"{location.uri} holds a partial output of an earlier run ({count} committed parts, no {MANIFEST}); "
                       "pass --resume to finish it or --overwrite to start over")
    clear_staging(location)  # temporaries of the killed run
    stray = [n for n in list_parts(location) if n not in planned]
    if stray and not config.incremental:
        raise JobError(f"{location.uri_of(location.join(stray[0]))} belongs to no input file of this plan (the input changed, "
                       "or --input/--limit differ from the first run); pass --overwrite to start over")
    return OutputState(kept=_whole_parts(location, planned, [n for n in list_parts(location) if n in planned]),
                       removed=tuple(stray))


def _continued(location: Location, planned: Mapping[str, InputFile], previous: Manifest | None) -> OutputState:
    """--incremental on a finished output: keep the unchanged files' parts unread, check the rest by their footers."""
    assert previous is not None and previous.table is not None, "the driver reads the manifest it continues"
    clear_staging(location)  # temporaries of a killed run
    known = {f.part: f for f in Snapshot.from_dict(previous.table).files.values()}
    unchanged = {name: None for name, file in planned.items() if name in known and known[name].identity == file.identity}
    present = list_parts(location)
    others = [name for name in present if name in planned and name not in unchanged]  # a killed run's, or older versions
    kept = {**unchanged, **_whole_parts(location, planned, others)}
    return OutputState(finished=previous, kept=kept, removed=tuple(n for n in present if n not in planned))


def require_same_options(location: Location, state: OutputState, options: dict) -> None:
    """Refuse (one line, naming the option) to keep output made with other options than ``options``."""
    if state.finished is not None:
        _require_same_options(location.uri_of(location.join(MANIFEST)), state.finished.output_options, options)
    for name, record in state.kept.items():
        if record is not None:  # None: kept unread, made under the manifest's options (checked above)
            _require_same_options(location.uri_of(location.join(name)), record.get("options"), options)


def _our_files(location: Location) -> list[str]:
    """The files under the prefix (relative names); raise if any is not ours."""
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True, allow_not_found=True))
    names = sorted(os.path.relpath(i.path, location.path) for i in infos if i.type == pafs.FileType.File)
    ours = (STAGING + "/", PART_PREFIX, INDEX_DIR + "/", HISTORY_DIR + "/")
    foreign = [n for n in names if not (n in (MANIFEST, LEASE_NAME) or n.startswith(ours))]
    if foreign:
        raise JobError(f"{location.uri} holds files this job did not write (e.g. {foreign[0]}); choose an empty --output")
    return names


def _delete(location: Location, names: list[str]) -> None:
    # Manifest first: readers stop trusting the prefix before its parts go.
    with storage_errors(location.uri):
        for name in sorted(names, key=lambda n: n != MANIFEST):
            location.filesystem.delete_file(location.join(name))


def _finished(location: Location, config: JobConfig) -> OutputState:
    if not config.resume:
        raise JobError(f"{location.uri} already holds a finished job ({MANIFEST}); pass --incremental to run what the "
                       "input gained since, --overwrite to redo it all, or choose another --output")
    return OutputState(finished=finished_manifest(location))


def has_manifest(location: Location) -> bool:
    """Whether a run finished here: a reader trusts the prefix only then."""
    with storage_errors(location.uri):
        return location.filesystem.get_file_info(location.join(MANIFEST)).type == pafs.FileType.File


def finished_manifest(location: Location) -> Manifest:
    """The manifest a finished run left; one line and the fix when it cannot be read."""
    where = location.uri_of(location.join(MANIFEST))
    try:
        return read_manifest(location)
    except ValueError as e:
        raise JobError(f"{where}: {e}; pass --overwrite to start over") from e


def _whole_parts(location: Location, planned: Mapping[str, InputFile], names: list[str]) -> dict[str, dict | None]:
    """Of the parts ``names``, those holding every planned row of the same version of their input file, with their footer records."""
    with ThreadPoolExecutor(max_workers=max(1, min(FOOTER_READ_THREADS, len(names)))) as pool:
        footers = list(pool.map(lambda name: read_part_record(location, name), names))
    kept = {}
    for name, (rows, record) in zip(names, footers):
        file = planned[name]
        identity = file.identity.to_dict() if file.identity is not None else None
        if rows == file.rows and (record or {}).get("identity") == identity:
            kept[name] = record
        else:  # the input file changed since (or the part predates identities): redone, and its part replaced
            print(f"{name}: its input file changed since the part was written ({rows} rows, now {file.rows}; "
                  f"{(record or {}).get('identity')}, now {identity}): running it again", file=sys.stderr)
    return kept


def _require_same_options(where: str, recorded: dict | None, current: dict) -> None:
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    differ = sorted(k for k in current.keys() | recorded.keys() if recorded.get(k) != current.get(k))
    if differ:
        first = differ[0]
        raise JobError(f"{where} was written with other options ({', '.join(differ)}; e.g. {first}={recorded.get(first)!r}, "
                       f"now {current.get(first)!r}); run with the same options, or pass --overwrite to redo it all")


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
