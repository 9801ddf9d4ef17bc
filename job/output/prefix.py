"""The driver side of the output prefix: what it holds, and what this run may do with it.

An output prefix holds::

    part-<stem>-<8 hex>.parquet   one per input file, with every row of that file (job.output.parts)
    _SUCCESS.json                 written last, after every part was verified (job.manifest): the table's snapshot
    _index/<run id>.ids           the table's ids as hashes, named by the manifest (job.output.table)
    _history/<run id>.json        every finished run's manifest
    _staging/...                  temporaries (local part writes, SageMaker shards): never read
    _lease.json                   while a run writes the prefix: who, until when (job.lease.lease)
    _delta_log/ or metadata/      --table-format delta / iceberg: the table format's own files (job.output.formats)

Before any work the driver reads what the prefix holds, once (``read_held``: our files, the
committed parts, the manifest and the table's snapshot it records), and ``job.output.night``
decides from it what the run keeps, adopts, runs and removes. Files this job does not write are
never deleted: a prefix holding any is refused. The caller holds the prefix's lease
(``job.driver``), so no other run changes it meanwhile; ``--overwrite`` clears everything but that
lease (``clear``). The options the kept parts were made with are checked once the run's plan is
decided (``require_same_options``). ``job.output.verify`` checks the parts after the work.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence

import pyarrow.fs as pafs

from job.errors import JobError
from job.lease.lease import LEASE_NAME
from job.manifest import MANIFEST, Manifest, read_manifest
from job.output.parts import PART_PREFIX, PART_SUFFIX, STAGING, is_part_name, read_part_record
from job.input.plan import FOOTER_READ_THREADS
from job.output.formats import FOLDERS
from job.output.nesting import refuse_holding_another
from job.output.night import UNREADABLE, Footer, Held, Night
from job.output.table import HISTORY_DIR, INDEX_DIR
from preprocess.recipe import Recipe
from storage import Location, storage_errors
from storage.parallel import map_in_order

def read_held(location: Location, read_manifest_too: bool, shared: bool = False, overwrite: bool = False) -> Held:
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
    return Held(location.uri, names, parts, finished, snapshot, {name: listed[name] for name in parts})


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


def require_same_options(location: Location, night: Night, options: dict) -> None:
    """Refuse (one line, naming the option) to keep output made with other options than ``options``."""
    if night.previous is not None:
        _require_same_options(location.uri_of(location.join(MANIFEST)), night.previous.output_options, options)
    for name, record in night.kept.items():
        if record is not None:  # None: kept unread, made under the manifest's options (checked above)
            _require_same_options(location.uri_of(location.join(name)), record.get("options"), options)


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


def _require_same_options(where: str, recorded: dict | None, current: dict) -> None:
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    recorded = _with_model_source(_with_recipe_defaults(recorded))
    differ = sorted(k for k in current.keys() | recorded.keys() if recorded.get(k) != current.get(k))
    if differ:
        first = differ[0]
        raise JobError(f"{where} was written with other options ({', '.join(differ)}; e.g. {first}={recorded.get(first)!r}, "
                       f"now {current.get(first)!r}); run with the same options, or pass --overwrite to redo it all")


def _with_recipe_defaults(recorded: dict) -> dict:
    """``recorded`` options with their recipe's fields that a table written before them lacks (interpolation, crop
    mode) at the values it was made with: its bilinear centre crop is the same recipe as today's default."""
    recipe = recorded.get("recipe")
    if not isinstance(recipe, dict):
        return recorded
    return {**recorded, "recipe": {**Recipe().to_dict(), **recipe}}


def _with_model_source(recorded: dict) -> dict:
    """``recorded`` options with the model's ``source`` a table written before it lacks: its ``arch``, since every model
    then was a torchvision name (the source of a torchvision model is its name)."""
    if "source" in recorded or "arch" not in recorded:
        return recorded
    return {**recorded, "source": recorded["arch"]}


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
