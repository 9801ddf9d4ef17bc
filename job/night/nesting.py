"""One job's output never inside another's: an output prefix is refused when it lies in, or holds, another table.

Readers take a table's folder whole: ``read_parquet('A/**/*.parquet')``, Spark and polars read
every Parquet file below ``A``. An output at ``A/inner`` would put its rows into ``A``'s table
for them, and ``A``'s next night would refuse the folder (it holds files ``A``'s job did not
write). So both ways are refused before any work, in one line naming both prefixes:

- ``refuse_inside_another(output)``: a folder above ``--output`` holds a table: a finished job's
  ``_SUCCESS.json``, a Delta log (``_delta_log/``) or an Iceberg table's ``metadata/``. A few
  requests per folder level, in parallel, before the lease is taken.
- ``refuse_holding_another(output, names)``: the output already holds such a table below it. From
  the recursive listing of the output the driver makes anyway (``job.night.held``), by the
  names alone: no request of its own, however big the prefix.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

import pyarrow.fs as pafs

from job.errors import JobError
from job.night.manifest import MANIFEST
from storage import Location
from storage.parallel import map_in_order

# What makes a folder a table, by a path inside it: (path, what it is). A folder is one when any of them is there.
DELTA_LOG = "_delta_log"
ICEBERG_HINT = "metadata/version-hint.text"  # an Iceberg table kept as a Hadoop catalog keeps it (ours does)
MARKERS = ((MANIFEST, f"a finished job ({MANIFEST})"), (DELTA_LOG, f"a Delta table ({DELTA_LOG}/)"),
           (ICEBERG_HINT, "an Iceberg table (metadata/)"))
PARENT_CHECK_THREADS = 16  # folder levels x markers in flight: each is one request to S3


def refuse_inside_another(output: Location) -> None:
    """JobError when a folder above ``output`` (up to the bucket or the filesystem's root) holds a table (``MARKERS``)."""
    parents = _parents(output.path)
    paths = [posixpath.join(parent, marker) for parent in parents for marker, _ in MARKERS]
    found = list(map_in_order(lambda path: _seen(output.filesystem, path), paths, threads=min(PARENT_CHECK_THREADS, len(paths))))
    for index, seen in enumerate(found):
        if seen:
            parent, (_, what) = parents[index // len(MARKERS)], MARKERS[index % len(MARKERS)]
            outer = output.uri_of(parent)
            raise JobError(f"--output {output.uri} lies inside {outer}, which holds {what}: its readers would take this "
                           f"job's rows for its own, and its next run would refuse the folder; choose an --output "
                           f"outside {outer}")


def refuse_holding_another(output: Location, names: Iterable[str]) -> None:
    """JobError when one of ``names`` (files under ``output``, relative to it) is another table's (``MARKERS``)."""
    for name in names:
        inner = nested_table(name)
        if inner is not None:
            where, what = inner
            inner_uri = output.uri_of(output.join(where))
            raise JobError(f"--output {output.uri} holds {what} at {inner_uri}: this job's readers would take its rows "
                           f"for this table's; choose an --output that holds no other table, or move {inner_uri} out")


def nested_table(name: str) -> tuple[str, str] | None:
    """(its folder, what it is) when the file ``name`` (relative to an output) marks a table in a sub-folder.

    Folders of the output's own bookkeeping (``_history/``, ``_staging/``, ...: a name part starting with
    ``_`` or ``.``) hold none; the output's own table files lie at its top, not in a sub-folder.
    """
    if "/" not in name:
        return None
    for marker, what in MARKERS:
        folder = _folder_of(name, marker)
        if folder and not any(part.startswith(("_", ".")) for part in folder.split("/")):
            return folder, what
    return None


def _folder_of(name: str, marker: str) -> str | None:
    """The folder whose ``marker`` the file ``name`` is (or lies in), or None."""
    if name == marker or name.endswith("/" + marker):
        return name[: -len(marker)].rstrip("/")
    if marker == DELTA_LOG and f"/{DELTA_LOG}/" in f"/{name}":
        return f"/{name}".split(f"/{DELTA_LOG}/", 1)[0].lstrip("/")
    return None


def _seen(filesystem: pafs.FileSystem, path: str) -> bool:
    """Whether ``path`` exists, as far as this user may look: a role allowed only its own prefix (an IAM policy on
    ``bucket/team/*``) is refused a look above it, which must not stop its job; what it cannot see, it cannot tell."""
    try:
        return filesystem.get_file_info(path).type != pafs.FileType.NotFound
    except OSError:
        return False


def _parents(path: str) -> list[str]:
    """Every folder above ``path``, nearest first: ``b/x/y`` -> ``b/x``, ``b``; ``/d/e`` -> ``/d``, ``/``."""
    parents = []
    while "/" in path.rstrip("/"):
        path = path.rstrip("/").rsplit("/", 1)[0] or "/"
        parents.append(path)
        if path == "/":
            break
    return parents
