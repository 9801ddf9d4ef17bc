"""List a large prefix in parallel, by common prefix: what every plan's listing runs on.

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

from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

LISTING_THREADS = 32  # listings in flight: S3 answers each in tens of milliseconds, mostly waiting
FAN_OUT_LEVELS = 3  # folder levels walked one by one, at most, looking for LISTING_THREADS sub-prefixes


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
            infos += level
            folders = [i.path for i in level if i.type == pafs.FileType.Directory]
            if not folders:
                return infos
        return infos + _list_all(pool, filesystem, folders, recursive=True)


def _list_all(pool: ThreadPoolExecutor, filesystem: pafs.FileSystem, folders: list[str], *,
              recursive: bool) -> list[pafs.FileInfo]:
    # allow_not_found: the caller found the root; a sub-prefix emptied since is simply no longer there.
    selectors = [pafs.FileSelector(folder, recursive=recursive, allow_not_found=True) for folder in folders]
    return [info for infos in pool.map(filesystem.get_file_info, selectors) for info in infos]
