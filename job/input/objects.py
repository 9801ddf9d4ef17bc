"""Image objects read as they lie: a prefix of JPEG/PNG/WebP/... files (S3 or a local folder) as input.

The listing tells such a prefix from a Parquet one by the names alone
(``job.input.data_files.is_image_prefix``). In an image prefix every listed object is an image to
the job, whatever its name (keys without an extension are common in content-addressed buckets):
the decoder reads its bytes' signature, and an object that is no image becomes an error row whose
id is its key, as a bad image does in Parquet.

``object_units`` cuts the objects into groups (``group_objects``), each an ``InputFile`` whose
``members`` are its objects: the unit of work and of output every engine already runs, through
``read_objects``, which ``job.input.plan.read_file`` calls for such a unit. The ids are the object
keys relative to the prefix: unique by construction, so no id check reads anything.

Why groups: one part per object would make 10 million parts for 10 million images; one part per
prefix would redo everything each night. ``group_objects`` cuts the sorted keys where a key's own
hash says so (content-defined boundaries): a key starts a group when ``hash(key) mod per_part == 0``,
so groups hold ``per_part`` objects on average, and a boundary depends on that key alone, never on
how many keys precede it. One object added or removed changes only the group it falls in (or, when
it is a boundary key itself, splits or joins that group and its neighbour); every later group keeps
its name and members, so an incremental night redoes one or two groups, not every group after it.
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
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from job.input.data_files import FileIdentity, Listing, input_relpath
from job.ids.hashing import id_hashes, ids_digest
from storage import Location
from storage.odd_keys import read_bytes

# Expected objects per group (--objects-per-part's default): 10 million objects make about 10,000
# parts; a group of 100 KB JPEGs is about 100 MB, a few seconds of one decoder's work. Small
# enough that a prefix of 20,000 images still feeds 20 decoders, large enough that a nightly
# table of millions of images does not become millions of files.
DEFAULT_PER_PART = 1024
MAX_PER_PART_FACTOR = 4  # a group is cut at 4x the expected size when no key's hash cuts it first
GROUP_MARK = "@"  # a group's name: "@<first key>" (never the bare mark: keys are not empty)
LEADING = "@"  # the leading group's name: the keys before the first boundary key
# The largest object read as one image. Photos are a few MB, the largest camera JPEGs and PNGs tens;
# a larger object is a video, an archive or an uncompressed scan, and every reader thread would hold it whole.
MAX_OBJECT_BYTES = 64 * 1024 * 1024
OBJECT_READ_THREADS = 16  # one GET per object: mostly S3 latency, so many in flight per reader
READ_ERROR = "_read_error"  # the record batch's column of objects that could not be read (null: read)


def object_units(location: Location, listing: Listing, per_part: int,
                 limit: int | None = None) -> list[tuple[str, tuple[tuple[str, int], ...], FileIdentity, int]]:
    """(path, members, identity, ids digest) of each group of the listed objects; ``limit``: the first objects only.

    ``members``: (path inside the filesystem, size) of each object, in key order (the listing's).
    """
    paths = list(listing)[:limit]
    keys = listing.names[:limit]
    identities = [listing[path] for path in paths]
    units = []
    for group in group_objects(keys, identities, per_part):
        members = tuple((path, identity.size) for path, identity in zip(paths[group.start : group.end],
                                                                          identities[group.start : group.end]))
        ids = pa.array(keys[group.start : group.end], pa.large_string())
        units.append((location.join(group.name), members, group.identity, ids_digest(id_hashes(ids, True)[0])))
    return units


def read_objects(location: Location, members: tuple[tuple[str, int], ...], image_column: str,
                 batch_rows: int) -> Iterator[tuple[list[str], pa.RecordBatch]]:
    """Yield (ids, record batch of ``image_column`` and ``READ_ERROR``) for a group's objects, ``batch_rows`` at a time.

    The next batch's objects are fetched while the caller works on this one. An object that cannot
    be read (gone since the plan, over ``MAX_OBJECT_BYTES``, refused by the store) is a row with a
    null image and its ``READ_ERROR``: one object never stops its group.
    """
    chunks = [members[start : start + batch_rows] for start in range(0, len(members), batch_rows)]
    with ThreadPoolExecutor(max_workers=OBJECT_READ_THREADS) as pool:
        def fetch(chunk) -> list[Future]:
            return [pool.submit(_read_object, location, path, size) for path, size in chunk]

        pending = fetch(chunks[0]) if chunks else []
        for index, chunk in enumerate(chunks):
            read, pending = [f.result() for f in pending], fetch(chunks[index + 1]) if index + 1 < len(chunks) else []
            ids = [input_relpath(location.path, path) for path, _ in chunk]
            yield ids, pa.record_batch({image_column: pa.array([data for data, _ in read], pa.binary()),
                                        READ_ERROR: pa.array([error for _, error in read], pa.string())})


def _read_object(location: Location, path: str, size: int) -> tuple[bytes | None, str | None]:
    uri = location.uri_of(path)
    if size > MAX_OBJECT_BYTES:
        return None, (f"object too large: {uri} is {size} bytes, over the {MAX_OBJECT_BYTES} bytes read as one image; "
                      "move it out of --input")
    try:
        return read_bytes(location, path), None
    except FileNotFoundError:
        return None, f"object gone: {uri} was deleted after the job planned it; the next --incremental run drops its row"
    except OSError as e:  # after the store's own retries: this object alone is lost, its group goes on
        return None, f"object unreadable: {uri}: {str(e).splitlines()[0]}"


@dataclass(frozen=True)
class ObjectGroup:
    """A run of sorted objects read and written together: one planned unit, one part."""

    name: str  # LEADING, or GROUP_MARK + its first key
    start: int  # its first object's index in the sorted keys
    end: int  # one past its last
    identity: FileIdentity  # total size, newest mtime, and the digest of every member's (key, size, mtime)


def key_ranges(groups: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """The keys each of a table's object groups (their names relative to the input) held: [its first key, the next
    group's first key), the leading group from the empty key, the last one without an upper bound.

    Groups are contiguous runs of the sorted keys, so the names of all of a table's groups say which keys each held
    without listing a member: a night takes a changed group's rows out of a shared table by this range.
    """
    names = sorted(groups)
    starts = [name.removeprefix(GROUP_MARK) for name in names]  # LEADING ("@") starts at the empty key
    return {name: (start, ends) for name, start, ends in zip(names, starts, [*starts[1:], None])}


def is_group_name(name: str) -> bool:
    """Whether ``name`` (an input unit relative to the input) names a group of image objects."""
    return name.startswith(GROUP_MARK)


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
    digest = hashlib.sha256("\n".join(f"{key}\0{i.size}\0{i.mtime_ns}{_changed(i)}" for key, i in zip(keys, identities)).encode())
    mtimes = [i.mtime_ns for i in identities if i.mtime_ns is not None]
    return FileIdentity(sum(i.size for i in identities), max(mtimes) if mtimes else None, digest.hexdigest()[:32])


def _changed(identity: FileIdentity) -> str:
    """A local object's change time in its group's digest (a rewrite that kept its mtime); nothing on S3, whose
    groups keep the digests earlier runs recorded."""
    return "" if identity.ctime_ns is None else f"\0{identity.ctime_ns}"
