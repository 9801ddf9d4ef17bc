"""The driver side of the output prefix: what it holds, what this run may do with it, whether it is whole.

An output prefix holds::

    part-<stem>-<8 hex>.parquet   one per planned input file, with every row of that file (job.parts)
    _staging/...                  temporaries (local part writes, SageMaker shards): never read
    _SUCCESS.json                 written last, after every part was verified (job.manifest)
    _lease.json                   while a run writes the prefix: who, until when (job.lease)

Before any work, ``prepare_output`` decides what an existing prefix means for this run:
- empty (or absent): every planned input file runs;
- finished (a manifest): refused, unless ``--overwrite`` (cleared, then a full run) or
  ``--resume`` (nothing to do: the job returns the manifest and exits 0, so a scheduler's
  retry of a finished job is a no-op);
- partial (parts, no manifest: an earlier run was killed): refused, unless ``--overwrite`` or
  ``--resume``, which keeps each part whose footer says it holds every planned row of its
  input file under the same options, and runs only the other files.
Files this job does not write are never deleted: a prefix holding any is refused. The caller
holds the prefix's lease (``job.driver``), so no other run changes it meanwhile; ``--overwrite``
clears everything but that lease.

After the work, ``verify`` holds every part against the plan (rows in == rows out, no id
twice: a repeated id is named with its parts and rows, a ``DataError``) before the manifest is
written; it keeps the ids in memory (about 30 bytes a row), the only driver state that grows
with the dataset, and reads each part whole, in one GET.
"""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.config import JobConfig
from job.errors import DataError, JobError
from job.lease import LEASE_NAME
from job.manifest import MANIFEST, Counts, Manifest, read_manifest
from job.parts import PART_PREFIX, PART_SUFFIX, STAGING, read_part_record
from job.plan import FOOTER_READ_THREADS, InputFile
from job.unique_ids import EXAMPLE_PLACES
from storage import Location, storage_errors

ERROR_EXAMPLES = 3  # error rows quoted in the manifest and the summary


@dataclass(frozen=True)
class OutputState:
    finished: Manifest | None = None  # with --resume on a finished job: its manifest
    # --resume: the committed parts it keeps (name -> footer record); their input files are skipped.
    kept: Mapping[str, dict | None] = field(default_factory=dict)


def prepare_output(location: Location, config: JobConfig, planned: Mapping[str, InputFile]) -> OutputState:
    """Refuse, clear, or keep what the output prefix holds (see the module docstring); the caller holds its lease.

    ``planned``: each planned input file by its part's name. The options of what is kept are
    checked once the run's ``Execution`` is decided: ``require_same_options``.
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
        return _finished(location, config)
    if not config.resume:
        count = sum(n.startswith(PART_PREFIX) for n in names)
        raise JobError(f"{location.uri} holds a partial output of an earlier run ({count} committed parts, no {MANIFEST}); "
                       "pass --resume to finish it or --overwrite to start over")
    clear_staging(location)  # temporaries of the killed run
    return OutputState(kept=_kept_parts(location, planned))


def require_same_options(location: Location, state: OutputState, options: dict) -> None:
    """Refuse (one line, naming the option) to keep output made with other options than ``options``."""
    if state.finished is not None:
        _require_same_options(location.uri_of(location.join(MANIFEST)), state.finished.output_options, options)
    for name, record in state.kept.items():
        _require_same_options(location.uri_of(location.join(name)), (record or {}).get("options"), options)


def _our_files(location: Location) -> list[str]:
    """The files under the prefix (relative names); raise if any is not ours."""
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True, allow_not_found=True))
    names = sorted(os.path.relpath(i.path, location.path) for i in infos if i.type == pafs.FileType.File)
    foreign = [n for n in names if not (n in (MANIFEST, LEASE_NAME) or n.startswith((STAGING + "/", PART_PREFIX)))]
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
        raise JobError(f"{location.uri} already holds a finished job ({MANIFEST}); pass --overwrite or choose another --output")
    where = location.uri_of(location.join(MANIFEST))
    try:
        manifest = read_manifest(location)
    except ValueError as e:
        raise JobError(f"{where}: {e}; pass --overwrite to start over") from e
    return OutputState(finished=manifest)


def _kept_parts(location: Location, planned: Mapping[str, InputFile]) -> dict[str, dict | None]:
    """The committed parts that hold their whole input file, with their footer records."""
    present = list_parts(location)
    stray = [n for n in present if n not in planned]
    if stray:
        raise JobError(f"{location.uri_of(location.join(stray[0]))} belongs to no input file of this plan (the input changed, "
                       "or --input/--limit differ from the first run); pass --overwrite to start over")
    with ThreadPoolExecutor(max_workers=max(1, min(FOOTER_READ_THREADS, len(present)))) as pool:
        footers = list(pool.map(lambda name: read_part_record(location, name), present))
    kept = {}
    for name, (rows, record) in zip(present, footers):
        if rows == planned[name].rows:
            kept[name] = record
        else:  # the input file changed since: its part is redone and replaced
            print(f"--resume: {name} has {rows} rows, its input file {planned[name].rows} now: running it again", file=sys.stderr)
    return kept


def _require_same_options(where: str, recorded: dict | None, current: dict) -> None:
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    differ = sorted(k for k in current.keys() | recorded.keys() if recorded.get(k) != current.get(k))
    if differ:
        first = differ[0]
        raise JobError(f"--resume: {where} was written with other options ({', '.join(differ)}; e.g. {first}={recorded.get(first)!r}, "
                       f"now {current.get(first)!r}); resume with the same options or pass --overwrite")


def list_parts(location: Location) -> list[str]:
    """Names of the committed parts directly under the output prefix."""
    with storage_errors(location.uri):
        infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, allow_not_found=True))
    names = (posixpath.basename(i.path) for i in infos if i.type == pafs.FileType.File)
    return sorted(n for n in names if n.startswith(PART_PREFIX) and n.endswith(PART_SUFFIX))


def verify(location: Location, expected: Mapping[str, InputFile]) -> tuple[Counts, list[dict]]:
    """Check every planned file's part, then all of them together; returns counts and error examples."""
    present = set(list_parts(location))
    missing = [f.path for name, f in expected.items() if name not in present]
    if missing:
        raise RuntimeError(f"{len(missing)} of {len(expected)} input files have no committed part (e.g. {missing[0]}); "
                           "no manifest was written: re-run with --resume")
    stale = sorted(present - set(expected))
    if stale:
        raise RuntimeError(f"{location.uri} holds {len(stale)} parts of no planned input file (e.g. {stale[0]}); "
                           "no manifest was written")
    with ThreadPoolExecutor(max_workers=max(1, min(FOOTER_READ_THREADS, len(expected)))) as pool:
        tables = list(pool.map(lambda item: _read_checked(location, *item), expected.items()))
    ids = pa.chunked_array([t.column("id") for t in tables], pa.string())
    _refuse_repeated_ids(location, list(expected), tables, ids)
    errored = sum(len(t) - t.column("error").null_count for t in tables)
    rows_in = sum(f.rows for f in expected.values())
    return Counts(rows_in=rows_in, rows_out=len(ids), predicted=len(ids) - errored, errored=errored), _error_examples(tables)


def _refuse_repeated_ids(location: Location, names: list[str], tables: list[pa.Table], ids: pa.ChunkedArray) -> None:
    """Raise DataError naming a repeated id and the parts and rows that hold it (the parts' rows are their input files')."""
    counts = pc.value_counts(ids)
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    if not len(repeated):
        return
    value = repeated.field("values")[0].as_py()
    places = [(name, int(row)) for name, table in zip(names, tables)
              for row in np.flatnonzero(pc.equal(table.column("id"), value).to_numpy(zero_copy_only=False))]
    where = ", ".join(f"{location.uri_of(location.join(name))} row {row}" for name, row in places[:EXAMPLE_PLACES])
    more = f" and {len(places) - EXAMPLE_PLACES} more rows" if len(places) > EXAMPLE_PLACES else ""
    extra = pc.sum(repeated.field("counts")).as_py() - len(repeated)
    raise DataError(f"output repeats ids: {value!r} is at {where}{more} ({len(repeated)} ids repeat, {extra} rows too many), "
                    "as the input does (--skip-id-check skipped the check that refuses this before any work); no manifest "
                    "was written: make the input's ids unique, then run again with --resume, which redoes the files "
                    "that changed")


def _error_examples(tables: list[pa.Table]) -> list[dict]:
    examples: list[dict] = []
    for table in tables:
        examples += table.filter(pc.is_valid(table.column("error"))).slice(0, ERROR_EXAMPLES - len(examples)).to_pylist()
        if len(examples) >= ERROR_EXAMPLES:
            break
    return examples


def _read_checked(location: Location, name: str, file: InputFile) -> pa.Table:
    path = location.join(name)
    # A part is about 100 bytes a row: one whole GET, not a footer read plus a ranged read per column.
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        table = pq.read_table(pa.BufferReader(f.read()), columns=["id", "error"])
    if table.num_rows != file.rows:
        raise RuntimeError(f"{name} has {table.num_rows} rows for the {file.rows} rows of {file.path}; no manifest was written")
    return table


def clear_staging(location: Location) -> None:
    """Delete ``<output>/_staging`` (temporaries of failed or finished writes), if there is one."""
    path = location.join(STAGING)
    with storage_errors(location.uri_of(path)):
        if location.filesystem.get_file_info(path).type == pafs.FileType.Directory:
            location.filesystem.delete_dir(path)
