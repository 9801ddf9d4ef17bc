"""Image objects another writer deleted from a shared table by their key: left out of their group while unchanged.

A privacy request takes one object's row out of a Delta or Iceberg table by its lineage
(``DELETE ... WHERE source_file = 'cats/0042.jpg'``), and a night never puts it back while that object
stays as it is. But a night runs a whole group of objects again when any one of them changed
(``job.input.objects``), which would score the deleted object again with its neighbours. So before any
work, ``withhold`` leaves such objects out of the plan's groups:

- the objects an earlier night left out (``TableFile.withheld``), while each keeps the size and
  modification time it had then;
- and, in each group the night runs again, the objects whose rows the table no longer holds though the
  group's last run scored them (the ids index says so) and that have not changed since (modified no later
  than the newest object that run saw). The table is read only where its log's statistics leave room for
  those groups' keys (``job.night.formats.by_source.sources_within``).

A group's part then holds its other objects, and the table's snapshot records the ones left out: an
object rewritten since (or whose size changed) is scored again, once; one deleted from the input is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import pyarrow as pa

from job.input.data_files import FileIdentity, Listing, input_relpath, unchanged
from job.input.objects import is_group_name, key_ranges
from job.input.plan import InputFile, InputPlan
from job.ids.hashing import id_hashes, ids_digest
from job.night.formats.by_source import DataFile, Leaving, sources_within
from job.ids.index import IdIndex
from job.night.record import Snapshot
from storage import Location

# (key relative to the input, size, mtime_ns, ctime_ns) of an object left out: its identity as listed then.
Withheld = tuple[str, int, "int | None", "int | None"]


def withhold(plan: InputPlan, snapshot: Snapshot, listing: Listing, output: Location,
             table_files: Callable[[], list[DataFile]], index: Callable[[], IdIndex]) -> InputPlan:
    """``plan`` with the objects another writer deleted from the table left out of their groups (see the module's
    docstring). ``table_files``: the table's data files, listed only when a group runs again; ``index``: its ids index."""
    root = plan.location.path
    groups = [f for f in plan.files if f.members is not None]
    if not groups:
        return plan
    identities = {input_relpath(root, path): listing[path] for f in groups for path, _ in f.members}
    out = _still_left_out(snapshot, identities)
    rerun = {name: entry for name, entry in snapshot.files.items()
             if is_group_name(name) and name not in {input_relpath(root, f.path) for f in groups if _unchanged(snapshot, root, f)}}
    if rerun:
        out |= _deleted_since(snapshot, rerun, identities, output, table_files, index)
    if not out:
        return plan
    return replace(plan, files=tuple(_without(f, root, out) if f.members is not None else f for f in plan.files))


def _unchanged(snapshot: Snapshot, root: str, file: InputFile) -> bool:
    entry = snapshot.files.get(input_relpath(root, file.path))
    return entry is not None and not entry.removed and unchanged(entry.identity, file.identity)


def _still_left_out(snapshot: Snapshot, identities: Mapping[str, FileIdentity]) -> dict[str, Withheld]:
    """The objects earlier nights left out that are listed as they were then."""
    out = {}
    for entry in snapshot.files.values():
        for key, size, mtime_ns, ctime_ns in entry.withheld:
            if unchanged(FileIdentity(size, mtime_ns, None, ctime_ns), identities.get(key)):
                out[key] = (key, size, mtime_ns, ctime_ns)
    return out


def _deleted_since(snapshot: Snapshot, rerun: Mapping, identities: Mapping[str, FileIdentity], output: Location,
                   table_files: Callable[[], list[DataFile]], index: Callable[[], IdIndex]) -> dict[str, Withheld]:
    """Of the listed objects in the key ranges of the groups run again: those their group's last run scored, unchanged
    since, whose rows the table no longer holds."""
    ranges = key_ranges(snapshot.files)
    within = Leaving(ranges=tuple(ranges[name] for name in sorted(rerun)))
    candidates = sorted(key for key in identities if within.holds(key))
    if not candidates:
        return {}
    held = sources_within(output, table_files(), within.ranges)
    absent = [key for key in candidates if key not in held]
    if not absent:
        return {}
    hashes = id_hashes(pa.array(absent, pa.large_string()), True)[0]
    key_of = dict(zip(hashes.tolist(), absent))
    out = {}
    for group, found in index().held(hashes, rerun).items():
        newest = rerun[group].identity.mtime_ns if rerun[group].identity is not None else None
        for key in (key_of[h] for h in found.tolist()):
            now = identities[key]
            if newest is not None and now.mtime_ns is not None and now.mtime_ns <= newest:
                out[key] = (key, now.size, now.mtime_ns, now.ctime_ns)
    return out


def _without(file: InputFile, root: str, out: Mapping[str, Withheld]) -> InputFile:
    """A group without the objects left out: its rows, ids digest and record of those left out."""
    members = tuple((path, size) for path, size in file.members if input_relpath(root, path) not in out)
    if len(members) == len(file.members):
        return file
    keys = [input_relpath(root, path) for path, _ in members]
    left_out = tuple(sorted(out[input_relpath(root, path)] for path, _ in file.members
                            if input_relpath(root, path) in out))
    return replace(file, rows=len(members), members=members, ids_digest=_digest(keys), withheld=left_out)


def _digest(keys: Iterable[str]) -> int:
    """The ids digest of a group's keys, as ``job.input.objects.object_units`` makes it."""
    return ids_digest(id_hashes(pa.array(list(keys), pa.large_string()), True)[0])
