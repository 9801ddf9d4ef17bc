"""Cut a prefix of image objects into groups: the unit of work and of output, as a Parquet file is.

One part per object would make 10 million parts for 10 million images; one part per prefix would
redo everything each night. ``group_objects`` cuts the sorted keys where a key's own hash says so
(content-defined boundaries): a key starts a group when ``hash(key) mod per_part == 0``, so groups
hold ``per_part`` objects on average, and a boundary depends on that key alone, never on how many
keys precede it. One object added or removed changes only the group it falls in (or, when it is a
boundary key itself, splits or joins that group and its neighbour); every later group keeps its
name and members, so an incremental night redoes one or two groups, not every group after it.
Groups by key prefix were the other choice; they follow the bucket's layout (one folder of a
million objects is one group) rather than a size, so they were not taken.

A run of keys without a boundary is cut at ``MAX_PER_PART_FACTOR x per_part`` objects so no group
grows without bound (about 2% of runs are that long at 4x); inside such a run boundaries are by
count, so an insert there shifts the groups up to the run's next real boundary, and no further.

A group is named by its first key (the leading group, before the first boundary key, by ``LEADING``
alone, so an object sorted before every other one does not rename it), and identified by a digest of
its members' (key, size, modification time): a group whose digest changed is redone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from job.input.data_files import FileIdentity

# Expected objects per group (--objects-per-part's default): 10 million objects make about 10,000
# parts; a group of 100 KB JPEGs is about 100 MB, a few seconds of one decoder's work. Small
# enough that a prefix of 20,000 images still feeds 20 decoders, large enough that a nightly
# table of millions of images does not become millions of files.
DEFAULT_PER_PART = 1024
MAX_PER_PART_FACTOR = 4  # a group is cut at 4x the expected size when no key's hash cuts it first
GROUP_MARK = "@"  # a group's name: "@<first key>" (never the bare mark: keys are not empty)
LEADING = "@"  # the leading group's name: the keys before the first boundary key


@dataclass(frozen=True)
class ObjectGroup:
    """A run of sorted objects read and written together: one planned unit, one part."""

    name: str  # LEADING, or GROUP_MARK + its first key
    start: int  # its first object's index in the sorted keys
    end: int  # one past its last
    identity: FileIdentity  # total size, newest mtime, and the digest of every member's (key, size, mtime)


def starts_group(key: str, per_part: int) -> bool:
    """Whether ``key`` starts a group whatever keys surround it: its hash mod ``per_part`` is 0."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % per_part == 0


def group_objects(keys: Sequence[str], identities: Sequence[FileIdentity], per_part: int = DEFAULT_PER_PART) -> list[ObjectGroup]:
    """The groups of the objects ``keys`` (relative to the prefix, sorted) with their listed ``identities``, in key order."""
    if per_part < 1:
        raise ValueError(f"per_part must be positive, got {per_part}")
    limit = per_part * MAX_PER_PART_FACTOR
    starts: list[int] = []
    for index, key in enumerate(keys):
        if not starts or index - starts[-1] >= limit or starts_group(key, per_part):
            starts.append(index)
    leading = bool(keys) and not starts_group(keys[0], per_part)
    bounds = list(zip(starts, [*starts[1:], len(keys)]))
    return [ObjectGroup(LEADING if leading and start == 0 else GROUP_MARK + keys[start], start, end,
                        members_identity(keys[start:end], identities[start:end])) for start, end in bounds]


def members_identity(keys: Sequence[str], identities: Sequence[FileIdentity]) -> FileIdentity:
    """One identity for a group: it differs when any member was added, removed, resized or rewritten."""
    digest = hashlib.sha256("\n".join(f"{key}\0{i.size}\0{i.mtime_ns}" for key, i in zip(keys, identities)).encode())
    mtimes = [i.mtime_ns for i in identities if i.mtime_ns is not None]
    return FileIdentity(sum(i.size for i in identities), max(mtimes) if mtimes else None, digest.hexdigest()[:32])
