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
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

import pyarrow.fs as pafs

from job.errors import JobError
from job.input.listing import list_tree
from storage import Location, require_bucket, storage_errors

COMPANION_SUFFIXES = (".crc", ".json")  # checksums and writers' metadata, never Parquet data
# Folder name -> what it means; the files beside such a log are not the table.
TABLE_LOGS = {
    "_delta_log": "a Delta table (_delta_log/): its folder also holds files the table has deleted",
    "_spark_metadata": "a Spark streaming output (_spark_metadata/): files of failed batches may sit beside the committed ones",
}


@dataclass(frozen=True)
class FileIdentity:
    """Which version of an input file a part was made from: a replaced file differs in one of these.

    S3's listing gives no ETag through pyarrow; its LastModified (whole seconds) changes on every
    PUT, so only a same-size replacement within the same second would go unseen.
    """

    size: int  # bytes
    mtime_ns: int | None  # local mtime, or S3's LastModified; None where the store gives none
    # A group of image objects (job.input.object_groups): the digest of its members' keys, sizes and
    # mtimes, which a total size and a newest mtime alone would not tell apart. None for a file.
    members: str | None = None

    def to_dict(self) -> dict:
        members = {"members": self.members} if self.members is not None else {}
        return {"size": self.size, "mtime_ns": self.mtime_ns, **members}

    @classmethod
    def from_dict(cls, data: dict | None) -> FileIdentity | None:
        """``to_dict``'s inverse, as a part's footer records it; None: a part written without one."""
        return cls(data["size"], data["mtime_ns"], data.get("members")) if data is not None else None


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


def list_data_files(location: Location) -> dict[str, FileIdentity]:
    """The data files under ``location`` (paths inside its filesystem, sorted) and their identities; JobError if none."""
    with storage_errors(location.uri):
        info = location.filesystem.get_file_info(location.path)
        if info.type == pafs.FileType.File:
            return {location.path: _identity(info)}
        if info.type == pafs.FileType.NotFound:
            require_bucket(location, "--input")
            raise JobError(f"{location.uri}: no such file or prefix; check --input")
        infos = list_tree(location.filesystem, location.path)  # in parallel by common prefix (job.input.listing)
    # Each FileInfo property read once: each read builds a Python object, and a million objects notice.
    listed = sorted((i.path, i.type == pafs.FileType.File, i.size, i.mtime_ns) for i in infos)
    relative = [input_relpath(location.path, path) for path, *_ in listed]
    _refuse_table_logs(location, relative)
    _refuse_dangling_links(location)
    files = {path: FileIdentity(size, mtime_ns) for (path, is_file, size, mtime_ns), name in zip(listed, relative)
             if is_file and is_data_file(name)}
    if not files:
        raise JobError(f"{location.uri}: no Parquet files under this prefix; check --input (Parquet files, or image "
                       "objects named *.jpg, *.png, *.webp, ...)")
    return files


def _identity(info: pafs.FileInfo) -> FileIdentity:
    return FileIdentity(info.size, info.mtime_ns)


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
