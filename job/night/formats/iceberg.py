"""``--table-format iceberg``: each night one new metadata version of an Iceberg table, with no catalog server.

This is ``--iceberg-catalog embedded`` (the default); ``iceberg_glue`` commits the same change
(``iceberg_change.apply_change``) through AWS Glue instead, for users whose readers find tables in Glue.

The table lives in the output prefix: the parts where the engines wrote them, and ``metadata/``
as a Hadoop-catalog table keeps it (``v<N>.metadata.json``, and ``version-hint.text`` naming N),
so pyiceberg's ``StaticTable.from_metadata(<output>)``, Spark's Hadoop catalog and DuckDB's
``iceberg_scan`` read the latest version without any catalog. As in a Hadoop catalog the ``v<N>``
files decide and the hint is a hint: the latest version is the highest ``v<N>`` in ``metadata/``
(a hint that is behind, empty or garbage is moved on by the next commit, never a traceback).

A commit is optimistic: read the latest version N, apply the night's change to it with pyiceberg
(against an in-memory SQL catalog registered on ``v<N>``), and publish the result as
``v<N+1>.metadata.json`` in one conditional PUT (create only if absent). Another writer that made
``v<N+1>`` first wins that PUT; ours is then applied again on top of theirs, a few times, and a
true conflict (they changed the columns, or kept winning) is refused in one line naming their
commit. Every file a reader opens appears whole in one step (``storage.conditional``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.fs as pafs

from job.errors import JobError
from job.night.formats import Applied, Commit, TableAt, TableFiles, TableState
from job.night.formats.by_source import Leaving
from job.night.formats.by_source import discard
from job.night.formats.iceberg_change import (FULL_SOURCE_METRICS, Changed, apply_change, committed_by, committed_run,
                                               listed_files, other_commit, table_listing, require_columns, require_same_columns,
                                               require_writable_table, table_uri)
from storage import Location, StorageError, storage_errors
from storage.conditional import create_exclusive, read_versioned, replace_if
from storage.resolve import s3_endpoint

NAMESPACE, NAME = "batch_inference", "predictions"  # the table's name in the throwaway in-memory catalog
HINT = "metadata/version-hint.text"
VERSION_FILE = re.compile(r"v(\d+)\.metadata\.json")
# Our commits are rebased by this module (apply_change on the latest version), not by pyiceberg's catalog retries.
TABLE_PROPERTIES = {"commit.retry.num-retries": "0", FULL_SOURCE_METRICS: "full"}
ATTEMPTS = 5  # another writer's commit between our read and our PUT: apply again on theirs, this many times at most


def require_ours(at: TableAt, schema: pa.Schema, state: TableState | None) -> None:
    """Refuse a table of other columns than the run writes, or a table our last run recorded whose metadata is gone."""
    version = latest_version(at.output)
    recorded = state is not None and state.version is not None
    if version is None:
        if recorded:
            raise JobError(f"{at.output.uri}: the Iceberg table run {state.number} committed (version {state.version}) "
                           f"has no metadata/v<N>.metadata.json now; pass --overwrite to redo the table")
        return
    require_columns(at.output.uri, _readable(at, version), schema)


def _readable(at: TableAt, version: int):
    """The table at ``version``; metadata that cannot be read is refused in one line (never rebuilt from our manifest)."""
    from pyiceberg.exceptions import ValidationError

    try:
        return static_table(at.output, at.endpoint_url, version)
    except (OSError, ValueError, ValidationError) as e:
        raise JobError(f"{at.output.uri}: the Iceberg table's metadata/v{version}.metadata.json cannot be read "
                       f"({' '.join(str(e).split())[:200]}); pass --overwrite to redo the table") from e


def commit(at: TableAt, change: Commit) -> Applied:
    """Apply ``change`` on the table's latest version as one new metadata version, numbered after the log's last run
    of ours; nothing when this run committed already, or when there is nothing to add or take out."""
    output = at.output
    for _ in range(ATTEMPTS):
        version = latest_version(output)
        latest = _base(at, version, change)
        if latest is not None and committed_by(latest.metadata, change.run_id):
            _point_hint(output, version)  # this run may have died before its hint named its version
            return Applied(version, again=True, live=frozenset(f.path for f in listed_files(latest, output)))
        ours = committed_run(latest.metadata) if latest is not None else 0
        number = max(change.number, ours + 1)
        written, changed = _prepare(at, version if latest is not None else None, change, number)
        if changed.empty:  # nothing to commit; a night that died before its hint named its version has it named now
            _point_hint(output, version)
            return Applied(version, number=number, live=changed.live)
        if _publish(output, written, (version or 0) + 1):
            return Applied((version or 0) + 1, changed.removed, number=number, withheld=changed.withheld, live=changed.live)
        # Lost the race: their v<N+1> stands, and ours is applied again on it.
        discard(output, (_path(written).removeprefix(f"{output.path}/"), *changed.rewritten))
    raise JobError(f"{output.uri}: other writers committed to the Iceberg table {ATTEMPTS} times while this run tried to, "
                   f"the last {other_commit(static_table(output, at.endpoint_url).metadata)}; nothing of this run was "
                   "committed: run again with --resume")


def _base(at: TableAt, version: int | None, change: Commit):
    """The table version ``change`` applies to (None: a new table). An --overwrite of a table whose latest metadata
    cannot be read makes a new table, as its next version; without --overwrite that table is refused."""
    if version is None:
        return None
    try:
        latest = _readable(at, version)
    except JobError:
        if change.overwrite:
            return None
        raise
    require_same_columns(at.output.uri, latest.metadata, change)
    return latest


def _prepare(at: TableAt, version: int | None, change: Commit, number: int) -> tuple[str, Changed]:
    """pyiceberg's new metadata file for ``change`` on ``v<version>`` (None: a new table, made with its first snapshot
    in one transaction): its location, and what the change did to the data files."""
    output = at.output
    catalog = _catalog(output, at.endpoint_url)
    catalog.create_namespace(NAMESPACE)
    with one_line(output.uri, version):
        if version is None:
            tx = catalog.create_table_transaction((NAMESPACE, NAME), schema=change.schema, location=table_uri(output),
                                                  properties=TABLE_PROPERTIES)
        else:
            tx = catalog.register_table((NAMESPACE, NAME), table_uri(output, f"metadata/v{version}.metadata.json")).transaction()
        changed = apply_change(tx, tx._table.io, change, output, number)
        try:
            tx.commit_transaction()
        except BaseException:
            discard(output, changed.rewritten)
            raise
    return catalog.load_table((NAMESPACE, NAME)).metadata_location, changed


@contextmanager
def one_line(uri: str, version: int | None) -> Iterator[None]:
    """pyiceberg's errors (a store error, a part it cannot add, a lost race) as one line: the table stays at ``version``."""
    from pyiceberg.exceptions import CommitFailedException

    try:
        yield
    except (CommitFailedException, OSError, ValueError) as e:
        raise StorageError(f"{uri}: the Iceberg commit failed; the table stays at version "
                           f"{'none' if version is None else version}: run again with --resume "
                           f"({' '.join(str(e).split())[:300]})") from e


def current_version(at: TableAt) -> int | None:
    return latest_version(at.output)


def require_writable(at: TableAt, removes: bool, leaving: Leaving, known: Mapping[str, str]) -> None:
    """Before any work: a night that must rewrite a data file other writers deleted rows of through delete files is
    refused (``iceberg_change.require_writable_table``). Iceberg has no CHECK constraints, and no column of ours can be
    made required (Iceberg allows no optional column to become required)."""
    if latest_version(at.output) is not None:
        require_writable_table(static_table(at.output, at.endpoint_url), at.output, leaving, known)


def data_files(at: TableAt) -> TableFiles:
    """The data files of the table's latest version, with their source_file bounds, and its current snapshot's id
    (none: no table)."""
    if latest_version(at.output) is None:
        return TableFiles()
    return table_listing(static_table(at.output, at.endpoint_url), at.output)


def static_table(output: Location, endpoint_url: str | None, version: int | None = None):
    """The table at metadata ``version``; None: the latest (the highest ``v<N>``, whatever the hint says)."""
    from pyiceberg.table import StaticTable

    version = latest_version(output) if version is None else version
    where = table_uri(output, f"metadata/v{version}.metadata.json")
    return StaticTable.from_metadata(where, properties=io_properties(output, endpoint_url))


def latest_version(output: Location) -> int | None:
    """The highest N of ``metadata/v<N>.metadata.json`` (None: no table), as a Hadoop catalog lists it."""
    selector = pafs.FileSelector(output.join("metadata"), allow_not_found=True)
    with storage_errors(output.uri):
        infos = output.filesystem.get_file_info(selector)
    versions = [int(m.group(1)) for info in infos if (m := VERSION_FILE.fullmatch(posixpath.basename(info.path)))]
    return max(versions, default=None)


def _publish(output: Location, written: str, version: int) -> bool:
    """Make pyiceberg's new metadata ``v<version>.metadata.json`` (create only if absent), then point the hint at it.
    False: another writer made that version first."""
    source = _path(written)
    with storage_errors(output.uri), output.filesystem.open_input_stream(source) as f:
        data = f.read()
    if create_exclusive(output, output.join(f"metadata/v{version}.metadata.json"), data) is None:
        return False
    with storage_errors(output.uri):
        output.filesystem.delete_file(source)  # pyiceberg's own name for the same metadata: the v<N> file is the table's
    _point_hint(output, version)
    return True


def _point_hint(output: Location, version: int) -> None:
    """Make the hint name ``version`` unless it names a later one already (a hint that is not a number is replaced).
    A writer that changed it meanwhile wins: the hint is only a hint."""
    hint, wanted = output.join(HINT), str(version).encode()
    found = read_versioned(output, hint)
    if found is None:
        create_exclusive(output, hint, wanted)
        return
    text = found[0].decode(errors="replace").strip()
    if not text.isdigit() or int(text) < version:
        replace_if(output, hint, wanted, found[1])


def _path(uri: str) -> str:
    return uri.removeprefix("s3://").removeprefix("file://")


def _catalog(output: Location, endpoint_url: str | None):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("embedded", uri="sqlite:///:memory:", **io_properties(output, endpoint_url))


def io_properties(output: Location, endpoint_url: str | None) -> dict[str, str]:
    """pyiceberg's FileIO options: the same endpoint and region as our S3 filesystem (credentials from the environment)."""
    if not output.is_s3:
        return {}
    endpoint = s3_endpoint(endpoint_url)
    return {"s3.region": output.filesystem.region, **({"s3.endpoint": endpoint} if endpoint else {})}
