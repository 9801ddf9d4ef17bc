"""What an existing output prefix means for this run: empty, finished, or partial.

``prepare_output`` runs on the driver before any work. The output prefix is
- empty (or absent): every planned input file runs;
- finished (``_SUCCESS.json``): refused, unless ``--overwrite`` (cleared, then a full run) or
  ``--resume`` (nothing to do: the job returns the manifest and exits 0, so a scheduler's
  retry of a finished job is a no-op);
- partial (parts or temporaries and no manifest: an earlier run was killed): refused, unless
  ``--overwrite`` or ``--resume``. ``--resume`` keeps each part whose footer says it holds
  every planned row of its input file under the same options, and runs only the other files.
Files this job does not write are never deleted: a prefix holding any is refused.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow.fs as pafs

from runners import commit
from runners.job import JobConfig, JobError
from runners.source import FOOTER_READ_THREADS, InputFile
from storage import Location, require_bucket, storage_errors


@dataclass(frozen=True)
class OutputState:
    finished: dict | None = None  # with --resume on a finished job: its manifest
    committed: tuple[str, ...] = ()  # parts kept by --resume; their input files are skipped


def prepare_output(location: Location, config: JobConfig, parts: commit.Parts, files: tuple[InputFile, ...]) -> OutputState:
    """Refuse, clear, or keep what the output prefix holds (see the module docstring)."""
    with storage_errors(location.uri):
        require_bucket(location, "--output")
        names = _our_files(location)
    if not names:
        return OutputState()
    if config.overwrite:
        _delete(location, names)
        return OutputState()
    if commit.MANIFEST in names:
        return _finished(location, config, parts)
    if not config.resume:
        count = sum(n.startswith(commit.PART_PREFIX) for n in names)
        raise JobError(f"{location.uri} holds a partial output of an earlier run ({count} committed parts, no {commit.MANIFEST}); "
                       "pass --resume to finish it or --overwrite to start over")
    commit.clear_staging(location)  # temporaries of the killed run
    return OutputState(committed=_kept_parts(location, parts, files))


def _our_files(location: Location) -> list[str]:
    """The files under the prefix (relative names); raise if any is not ours."""
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True, allow_not_found=True))
    names = sorted(os.path.relpath(i.path, location.path) for i in infos if i.type == pafs.FileType.File)
    foreign = [n for n in names if not (n == commit.MANIFEST or n.startswith((commit.STAGING + "/", commit.PART_PREFIX)))]
    if foreign:
        raise JobError(f"{location.uri} holds files this job did not write (e.g. {foreign[0]}); choose an empty --output")
    return names


def _delete(location: Location, names: list[str]) -> None:
    # Manifest first: readers stop trusting the prefix before its parts go.
    with storage_errors(location.uri):
        for name in sorted(names, key=lambda n: n != commit.MANIFEST):
            location.filesystem.delete_file(location.join(name))


def _finished(location: Location, config: JobConfig, parts: commit.Parts) -> OutputState:
    if not config.resume:
        raise JobError(f"{location.uri} already holds a finished job ({commit.MANIFEST}); pass --overwrite or choose another --output")
    manifest = commit.read_manifest(location)
    _require_same_options(location.uri_of(location.join(commit.MANIFEST)), manifest.get("output_options"), parts.options)
    print(f"--resume: {location.uri} already holds a finished job ({commit.MANIFEST}); nothing to do", file=sys.stderr)
    return OutputState(finished=manifest)


def _kept_parts(location: Location, parts: commit.Parts, files: tuple[InputFile, ...]) -> tuple[str, ...]:
    """The committed parts that hold their whole input file under this job's options."""
    planned = {parts.name(f): f for f in files}
    present = commit.list_parts(location)
    stray = [n for n in present if n not in planned]
    if stray:
        raise JobError(f"{location.uri_of(location.join(stray[0]))} belongs to no input file of this plan (the input changed, "
                       "or --input/--limit differ from the first run); pass --overwrite to start over")
    with ThreadPoolExecutor(max_workers=max(1, min(FOOTER_READ_THREADS, len(present)))) as pool:
        footers = list(pool.map(lambda name: commit.read_part_record(location, name), present))
    kept = []
    for name, (rows, record) in zip(present, footers):
        _require_same_options(location.uri_of(location.join(name)), (record or {}).get("options"), parts.options)
        if rows == planned[name].rows:
            kept.append(name)
        else:  # the input file changed since: its part is redone and replaced
            print(f"--resume: {name} has {rows} rows, its input file {planned[name].rows} now: running it again", file=sys.stderr)
    return tuple(kept)


def _require_same_options(where: str, recorded: dict | None, current: dict) -> None:
    if recorded is None:
        raise JobError(f"{where} records no job options (not written by this version?); pass --overwrite to start over")
    differ = sorted(k for k in current.keys() | recorded.keys() if recorded.get(k) != current.get(k))
    if differ:
        first = differ[0]
        raise JobError(f"--resume: {where} was written with other options ({', '.join(differ)}; e.g. {first}={recorded.get(first)!r}, "
                       f"now {current.get(first)!r}); resume with the same options or pass --overwrite")
