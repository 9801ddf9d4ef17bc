"""``--table-format iceberg --iceberg-catalog glue``: the run's one snapshot committed through AWS Glue's Data Catalog.

Use it when the table's readers find tables by name in Glue (Athena, EMR, Spark's and Ray Data's
Glue catalogs). The parts and the metadata lie in ``--output`` as with the embedded catalog
(``metadata/<N>-<uuid>.metadata.json``, pyiceberg's names); Glue's entry for ``--iceberg-table``
names the current metadata file. pyiceberg's ``GlueCatalog`` commits: the first run creates the
Glue table with its first snapshot in one ``CreateTable``; every later night is one
``UpdateTable`` conditioned on the entry's ``VersionId`` (Glue's optimistic concurrency): a
writer that committed meanwhile makes ours fail whole, and ours is then applied again on the
table's new latest version (``iceberg_change.apply_change``), a few times. The table's version is
the N of its metadata file: 0 after the first run, one more each night.

The refusals are the embedded catalog's (``iceberg_change.require_columns``, a true conflict
named by ``other_commit``) and one more: a Glue table of that name whose files lie elsewhere
than ``--output``. Glue's client
is pyiceberg's (boto3): credentials from the environment, the output bucket's region, the
endpoint AWS's or ``AWS_ENDPOINT_URL_GLUE`` (boto3's own setting: LocalStack, moto).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pyarrow as pa

from job.errors import JobError
from job.night.formats import Applied, Commit, TableAt, TableFiles, TableState
from job.night.formats.iceberg import ATTEMPTS, TABLE_PROPERTIES, io_properties, one_line
from job.night.formats.by_source import Leaving, discard
from job.night.formats.iceberg_change import (Changed, apply_change, committed_by, committed_run, listed_files,
                                               other_commit, require_columns, require_same_columns,
                                               require_writable_table, table_listing, table_uri)
from storage import StorageError

METADATA_VERSION = re.compile(r"(\d+)-.*\.metadata\.json")  # pyiceberg's (and Iceberg Java's) metadata file names
GONE = "gone"  # a Glue entry whose metadata file is no more (--overwrite cleared the prefix): replaced by the next commit


def require_ours(at: TableAt, schema: pa.Schema, state: TableState | None) -> None:
    """Refuse before any work: no such database, a table of that name elsewhere or of other columns, or a table our
    last run recorded that Glue no longer names (or whose metadata is gone)."""
    catalog = _catalog(at)
    database, _ = _split(at)
    with _glue_errors(at, "cannot be read"):
        from pyiceberg.exceptions import NoSuchNamespaceError

        try:
            catalog.load_namespace_properties(database)
        except NoSuchNamespaceError as e:
            raise JobError(f"Glue database {database} does not exist in {at.output.filesystem.region}: create it "
                           "(terraform/glue.tf declares one), or pass --iceberg-table naming a database that exists") from e
        table = _load(catalog, at)
    recorded = state is not None and state.version is not None
    where = f"Glue table {at.name} ({at.output.uri})"
    if table is None and recorded:
        raise JobError(f"{where}: Glue has no such table now, and run {state.number} committed version {state.version} "
                       "of it; pass --overwrite to redo the table")
    if table is None or (table == GONE and not recorded):
        return
    if table == GONE:
        raise StorageError(f"{where}: Glue names a metadata file that is gone; pass --overwrite to redo the table")
    if table.location().rstrip("/") != table_uri(at.output):
        raise JobError(f"Glue table {at.name} is the table at {table.location()}, not at --output {at.output.uri}; "
                       "pass another --iceberg-table, or the --output it was made with")
    require_columns(where, table, schema)


def commit(at: TableAt, change: Commit) -> Applied:
    """Apply ``change`` on the Glue table's latest version as one Glue commit (once per run number)."""
    from pyiceberg.exceptions import CommitFailedException

    catalog, where = _catalog(at), f"{at.output.uri} (Glue table {at.name})"
    for _ in range(ATTEMPTS):
        with _glue_errors(at, "cannot be read"):
            current = _load(catalog, at)
        ours = 0
        if current not in (None, GONE):
            if committed_by(current.metadata, change.run_id):  # this run's commit landed, its answer did not
                return Applied(version_of(current), again=True,
                               live=frozenset(f.path for f in listed_files(current, at.output)))
            ours = committed_run(current.metadata)
            require_same_columns(where, current.metadata, change)
        before = None if current in (None, GONE) else version_of(current)
        number = max(change.number, ours + 1)  # numbered after the log's last run of ours
        try:
            with one_line(where, before), _glue_errors(at, "was not committed"):
                changed = _commit_once(catalog, at, current, change, number)
                if changed.empty:
                    return Applied(before, number=number, live=changed.live)
                return Applied(version_of(catalog.load_table(_split(at))), changed.removed, number=number,
                               withheld=changed.withheld, live=changed.live)
        except StorageError as e:
            if not isinstance(e.__cause__, CommitFailedException):
                raise
            # Another writer's UpdateTable came first: ours is applied again on their version.
    with _glue_errors(at, "cannot be read"):
        latest = _load(catalog, at)
    raise JobError(f"{where}: other writers committed to the Iceberg table {ATTEMPTS} times while this run tried to, "
                   f"the last {other_commit(latest.metadata)}; nothing of this run was committed: run again with --resume")


def _commit_once(catalog, at: TableAt, current, change: Commit, number: int) -> Changed:
    """One try: the Glue table made (``current`` None or ``GONE``) or updated with ``change`` as run ``number``."""
    if current in (None, GONE):
        if current == GONE:
            catalog.drop_table(_split(at))  # the entry only: Glue's DeleteTable leaves the files alone
        tx = catalog.create_table_transaction(_split(at), schema=change.schema, location=table_uri(at.output),
                                              properties=TABLE_PROPERTIES)
    else:
        tx = current.transaction()
    changed = apply_change(tx, tx._table.io, change, at.output, number)
    if changed.empty:
        return changed
    try:
        tx.commit_transaction()
    except BaseException:
        discard(at.output, changed.rewritten)  # no version names them
        raise
    return changed


def current_version(at: TableAt) -> int | None:
    with _glue_errors(at, "cannot be read"):
        table = _load(_catalog(at), at)
    return None if table in (None, GONE) else version_of(table)


def require_writable(at: TableAt, removes: bool, leaving: Leaving, known: Mapping[str, str]) -> None:
    """Before any work: as the embedded catalog's (``iceberg.require_writable``), on the table Glue names."""
    with _glue_errors(at, "cannot be read"):
        table = _load(_catalog(at), at)
    if table not in (None, GONE):
        require_writable_table(table, at.output, leaving, known)


def data_files(at: TableAt) -> TableFiles:
    """The data files of the Glue table's latest version, with their source_file bounds, and its current snapshot's
    id (none: no table)."""
    with _glue_errors(at, "cannot be read"):
        table = _load(_catalog(at), at)
    return TableFiles() if table in (None, GONE) else table_listing(table, at.output)


def version_of(table) -> int:
    """The table's version: the N of its current ``<N>-<uuid>.metadata.json``, one more each commit."""
    found = METADATA_VERSION.fullmatch(posixpath.basename(table.metadata_location))
    if found is None:
        raise JobError(f"{table.metadata_location}: not an Iceberg metadata file name (<N>-<uuid>.metadata.json); "
                       "the Glue table was not written by an Iceberg catalog: pass another --iceberg-table")
    return int(found.group(1))


def _load(catalog, at: TableAt):
    """The Glue table (pyiceberg's ``Table``), None when Glue has no such table, ``GONE`` when its metadata file is gone."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(_split(at))
    except NoSuchTableError:
        return None
    except FileNotFoundError:
        return GONE


def _catalog(at: TableAt):
    from pyiceberg.catalog.glue import GlueCatalog

    region = at.output.filesystem.region
    return GlueCatalog("glue", **{"glue.region": region, **io_properties(at.output, at.endpoint_url)})


def _split(at: TableAt) -> tuple[str, str]:
    database, name = (at.name or "").split(".")
    return database, name


@contextmanager
def _glue_errors(at: TableAt, what: str) -> Iterator[None]:
    """Glue's own failures (credentials, permissions, an unreachable endpoint) as one line naming the table and the fix."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as e:
        raise StorageError(f"Glue table {at.name} {what} ({' '.join(str(e).split())[:300]}); check the AWS credentials, "
                           "region, and that the role may glue:GetDatabase, GetTable, CreateTable, UpdateTable "
                           "(terraform/glue.tf)") from e
