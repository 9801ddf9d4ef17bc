"""Which files under an input prefix are data: the listing every plan starts from.

``list_data_files(location)`` lists the prefix recursively, with each file's identity (size and
modification time: what the listing itself tells, no read of the file), (Hive-style partition folders such
as ``date=2026-11-01/part-0.parquet`` are read; their keys are not needed, every row has its
id) and keeps what a Parquet reader would read. It skips what writers leave beside the data,
by the convention Spark, Hive and pyarrow.dataset share: any file or folder whose name starts
with ``_`` or ``.`` (``_SUCCESS``, ``_committed_*``, ``_started_*``, ``_temporary/``,
``.part-0.parquet.crc``, ``.hive-staging*``), and ``*.crc`` / ``*.json`` companions. Any other
file is taken as data and must be Parquet: the footer check refuses it by name rather than
dropping rows nobody asked to drop; so is a symbolic link to nothing (``*.parquet`` -> a moved file).

A folder holding a table log (``_delta_log/``, ``_spark_metadata/``) is refused: such a folder
also holds files the table has removed or a failed batch left, so its files are not the
table. The listing is a snapshot: files added after it are not part of this run.

A large prefix is listed in parallel, by common prefix (``list_tree``), because
pyarrow's recursive listing of an S3 prefix is one paginated ``ListObjectsV2`` stream without a
delimiter (Arrow 13 on, apache/arrow#35440): 1,000 keys a request, one request after another, so
10 million objects are 10,000 round trips in a row. ``list_tree`` first walks the top folder levels
one request each (with the delimiter: the common prefixes), until it has ``LISTING_THREADS``
sub-prefixes or has gone ``FAN_OUT_LEVELS`` deep, then lists every sub-prefix recursively, in
parallel threads (pyarrow releases the GIL while it lists). A bucket laid out by date or by shard
(``photos/2026/11/25/...``) lists at ``LISTING_THREADS`` times the rate; a flat prefix of millions
of keys has no common prefix to split on and lists as one stream, as before (pyarrow exposes no
``StartAfter`` to split it by key range). The same applies to a local folder (one ``scandir`` per folder).
"""

from __future__ import annotations

import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from job.errors import JobError
from storage import Location, require_bucket, storage_errors
from storage.odd_keys import has_empty_segment

LISTING_THREADS = 32  # listings in flight: S3 answers each in tens of milliseconds, mostly waiting
FAN_OUT_LEVELS = 3  # folder levels walked one by one, at most, looking for LISTING_THREADS sub-prefixes
# By name only (is_image_prefix): the formats the CPU decoder (Pillow) reads.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
PARQUET_SUFFIXES = (".parquet", ".parq")
COMPANION_SUFFIXES = (".crc", ".json")  # checksums and writers' metadata, never Parquet data
# Folder name -> what it means; the files beside such a log are not the table.
TABLE_LOGS = {
    "_delta_log": "a Delta table (_delta_log/): its folder also holds files the table has deleted",
    "_spark_metadata": "a Spark streaming output (_spark_metadata/): files of failed batches may sit beside the committed ones",
}


@dataclass(frozen=True, slots=True)  # one per listed file: no __dict__ each
class FileIdentity:
    """Which version of an input file a part was made from: a replaced file differs in one of these.

    S3's listing gives no ETag through pyarrow; its LastModified (whole seconds) changes on every
    PUT, so only a same-size replacement within the same second would go unseen. A local file's
    mtime can be set back (``cp -p``, ``rsync -t``, ``touch -d``: copy tools that keep times), so a
    local file also carries its inode's change time, which every write and every setting of the
    mtime moves to now and no user call sets back: a rewrite shows there at the cost of one ``stat``
    a file, where a content digest would read every byte of every file each night.
    """

    size: int  # bytes
    mtime_ns: int | None  # local mtime, or S3's LastModified; None where the store gives none
    # A group of image objects (job.input.objects.group_objects): the digest of its members' keys, sizes and
    # mtimes, which a total size and a newest mtime alone would not tell apart. None for a file.
    members: str | None = None
    # A local file's st_ctime_ns (see above); None on S3, and in identities recorded before it was kept: such an
    # identity vouches for no local file, which is then redone once and recorded with it.
    ctime_ns: int | None = None

    def to_dict(self) -> dict:
        members = {"members": self.members} if self.members is not None else {}
        ctime = {"ctime_ns": self.ctime_ns} if self.ctime_ns is not None else {}
        return {"size": self.size, "mtime_ns": self.mtime_ns, **members, **ctime}

    @classmethod
    def from_dict(cls, data: dict | None) -> FileIdentity | None:
        """``to_dict``'s inverse, as a part's footer records it; None: a part written without one."""
        return cls(data["size"], data["mtime_ns"], data.get("members"), data.get("ctime_ns")) if data is not None else None


class Listing(dict):
    """The data files of an input (path inside its filesystem -> ``FileIdentity``, sorted) and their kind.

    ``images``: the files are image objects (``is_image_prefix``), read as they lie
    (``job.input.objects``), rather than Parquet files. Decided by the names alone, with the listing.
    ``names``: of image objects, each one's path relative to the prefix (``input_relpath``: its key and
    id), in the same order; the listing computed them, and 10 million objects would notice a second time.
    """

    def __init__(self, files: dict[str, FileIdentity], images: bool, names: list[str] | None = None) -> None:
        super().__init__(files)
        self.images = images
        self.names = names if images else None


def unchanged(recorded: FileIdentity | None, listed: FileIdentity | None) -> bool:
    """Whether an input file is the version a part or a snapshot recorded: the one place this is answered.

    A part recorded without an identity never vouches for its file.
    """
    return recorded is not None and recorded == listed


def input_relpath(input_root: str, path: str) -> str:
    """An input file's path relative to the input prefix (its name when the input is one file): how a part, the
    table's snapshot and positional ids name the file, the same on every run."""
    if path == input_root:
        return posixpath.basename(path)
    folder = input_root.rstrip("/") + "/"
    # Listed paths are normal (no "..", no "//"): a slice gives what relpath would, at a tenth of its cost,
    # which 10 million objects' ids notice.
    return path[len(folder):] if path.startswith(folder) else posixpath.relpath(path, input_root)


def list_data_files(location: Location) -> Listing:
    """The data files under ``location`` (paths inside its filesystem, sorted), their identities and kind; JobError if
    none, or if Parquet files and image objects are mixed."""
    with storage_errors(location.uri):
        info = location.filesystem.get_file_info(location.path)
        if info.type == pafs.FileType.File:  # one file: Parquet, or one image object
            name = input_relpath(location.path, location.path)
            identity = FileIdentity(info.size, info.mtime_ns, None, _ctime_ns(location, info.path))
            return Listing({location.path: identity}, is_image_prefix(location, [location.path], [name]), [name])
        if info.type == pafs.FileType.NotFound:
            require_bucket(location, "--input")
            raise JobError(f"{location.uri}: no such file or prefix; check --input")
        infos = list_tree(location.filesystem, location.path)  # in parallel by common prefix (list_tree)
    # Each FileInfo property read once: each read builds a Python object, and a million objects notice.
    listed = sorted((i.path, i.type == pafs.FileType.File, i.size, i.mtime_ns) for i in infos)
    relative = [input_relpath(location.path, path) for path, *_ in listed]
    _refuse_table_logs(location, relative)
    _refuse_dangling_links(location)
    files, names = {}, []
    for (path, is_file, size, mtime_ns), name in zip(listed, relative):
        if is_file and is_data_file(name):
            files[path] = FileIdentity(size, mtime_ns, None, _ctime_ns(location, path))
            names.append(name)
    if not files:
        raise JobError(f"{location.uri}: no Parquet files under this prefix; check --input (Parquet files, or image "
                       "objects named *.jpg, *.png, *.webp, ...)")
    listing = Listing(files, is_image_prefix(location, list(files), names), names)
    if not listing.images:
        _refuse_unreadable_keys(location, listing)
    return listing


def _refuse_unreadable_keys(location: Location, listing: Listing) -> None:
    """Refuse a Parquet file whose S3 key has an empty segment (``a//b.parquet``): pyarrow's Parquet reader cannot open
    it. (An image object with such a key is read whole, ``storage.odd_keys``; a Parquet file is read in ranges.)"""
    odd = next((path for path in listing if has_empty_segment(path)), None) if location.is_s3 else None
    if odd is not None:
        raise JobError(f"{location.uri_of(odd)}: a Parquet file whose key has an empty path segment ('//'), which the "
                       "Parquet reader cannot open; copy it to a key without one (or out of --input)")


def _ctime_ns(location: Location, path: str) -> int | None:
    """A local file's inode change time (``FileIdentity.ctime_ns``); None on S3. One ``stat``: pyarrow's listing has none."""
    if location.is_s3:
        return None
    try:
        return os.stat(path).st_ctime_ns
    except OSError:
        return None  # gone since the listing: the plan's read of it says so


def is_data_file(relative_path: str) -> bool:
    """Whether a file (its path relative to the input prefix) is data rather than a writer's companion."""
    # A part of the path starts with "_" or ".": the path does, or holds "/_" or "/." (no split: a million keys notice).
    hidden = relative_path.startswith(("_", ".")) or "/_" in relative_path or "/." in relative_path
    return not hidden and not relative_path.endswith(COMPANION_SUFFIXES)


def _refuse_table_logs(location: Location, relative_paths) -> None:
    for relative in relative_paths:
        for log, meaning in TABLE_LOGS.items():
            if log in relative and log in relative.split("/"):  # the substring first: a million keys split cost seconds
                where = location.uri_of(location.join(relative.split(log)[0].rstrip("/"))).rstrip("/")
                raise JobError(f"{where}: is {meaning}, so reading every Parquet file in it would run rows that are "
                               "not in the table; point --input at a Parquet export of the table")


def _refuse_dangling_links(location: Location) -> None:
    """Refuse a local symbolic link to nothing that would be data; pyarrow's listing leaves it out without a word."""
    if location.is_s3:
        return  # S3 has no links
    dangling = [path for path in _links_to_nothing(location.path) if is_data_file(os.path.relpath(path, location.path))]
    if dangling:
        more = f" (and {len(dangling) - 1} more)" if len(dangling) > 1 else ""
        raise JobError(f"{dangling[0]}: a symbolic link to {os.readlink(dangling[0])}, which does not exist{more}; fix "
                       "or remove it: every Parquet file under --input is read")


def _links_to_nothing(root: str) -> list[str]:
    """Links under ``root`` whose target is missing, following linked folders as pyarrow's listing does (once each).

    By ``os.scandir`` entries, whose type comes with the folder's listing: a million files cost no
    extra system call each (``os.path.islink`` per file took longer than the listing itself).
    """
    found, seen, folders = [], set(), [root]
    while folders:
        folder = folders.pop()
        try:
            identity = (os.stat(folder).st_dev, os.stat(folder).st_ino)
            if identity in seen:  # a link back to a folder already walked
                continue
            seen.add(identity)
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir():  # follows a link to a folder, as pyarrow's listing does
                        folders.append(entry.path)
                    elif entry.is_symlink() and not os.path.exists(entry.path):
                        found.append(entry.path)
        except OSError:
            continue  # an unreadable folder: as os.walk, leave it to the listing, which names it
    return sorted(found)



def list_tree(filesystem: pafs.FileSystem, root: str) -> list[pafs.FileInfo]:
    """Every file and folder under the folder ``root``, as one recursive ``FileSelector`` lists them (in no set order).

    The caller has found ``root`` to be a folder (or an S3 prefix)."""
    infos: list[pafs.FileInfo] = []
    folders = [root]
    with ThreadPoolExecutor(max_workers=LISTING_THREADS) as pool:
        for _ in range(FAN_OUT_LEVELS):
            if len(folders) >= LISTING_THREADS:
                break
            level = _list_all(pool, filesystem, folders, recursive=False)
            if _lists_itself(folders, level):
                break  # an empty key segment ("a//b.jpg"): pyarrow lists "a/" as folder "a" again, so list "a" whole
            infos += level
            folders = [i.path for i in level if i.type == pafs.FileType.Directory]
            if not folders:
                return infos
        return infos + _list_all(pool, filesystem, folders, recursive=True)


def _lists_itself(folders: list[str], level: list[pafs.FileInfo]) -> bool:
    """Whether a folder's listing named the folder itself: keys with an empty segment below it, which only a recursive
    listing of the folder gives apart (one level deeper would list the folder again and again)."""
    listed = set(folders)
    return any(i.path in listed or i.path.endswith("/") for i in level)


def _list_all(pool: ThreadPoolExecutor, filesystem: pafs.FileSystem, folders: list[str], *,
              recursive: bool) -> list[pafs.FileInfo]:
    # allow_not_found: the caller found the root; a sub-prefix emptied since is simply no longer there.
    selectors = [pafs.FileSelector(folder, recursive=recursive, allow_not_found=True) for folder in folders]
    return [info for infos in pool.map(filesystem.get_file_info, selectors) for info in infos]


def is_image_name(relative: str) -> bool:
    return relative.lower().endswith(IMAGE_SUFFIXES)


def is_image_prefix(location: Location, paths: Sequence[str], names: Sequence[str]) -> bool:
    """Whether the listed data files (``paths`` in the filesystem, ``names`` relative to the prefix, in the same
    order) are image objects; JobError for a mixed prefix.

    By the names in the listing, the only thing known before any read: an object named ``*.jpg``, ``*.png``...
    makes it an image prefix (one GET per object to sniff magic bytes would cost the planning of 10 million
    objects hours). A prefix holding both Parquet files and image files is refused: which rows it means is a guess.
    """
    images = next((path for path, name in zip(paths, names) if is_image_name(name)), None)
    if images is None:
        return False
    parquet = next((path for path in paths if path.lower().endswith(PARQUET_SUFFIXES)), None)
    if parquet is not None:
        raise JobError(f"{location.uri}: holds both Parquet files ({location.uri_of(parquet)}) and image files "
                       f"({location.uri_of(images)}); point --input at a prefix of one kind: Parquet files, or image objects")
    return True
