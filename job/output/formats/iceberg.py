"""``--table-format iceberg``: the run's parts committed as one snapshot of an Iceberg table, with no catalog server.

This is ``--iceberg-catalog embedded`` (the default); ``iceberg_glue`` commits the same snapshot
(``write_snapshot``) through AWS Glue instead, for users whose readers find tables in Glue.

The table lives in the output prefix: the parts where the engines wrote them, and ``metadata/``
as a Hadoop-catalog table keeps it (``v<N>.metadata.json`` and ``version-hint.text`` naming N),
so pyiceberg's ``StaticTable.from_metadata(<output>)``, Spark's Hadoop catalog and DuckDB's
``iceberg_scan`` read the latest version without any catalog. A commit is made by pyiceberg
against an in-memory SQL catalog registered on the current version; its new metadata becomes
``v<N+1>.metadata.json`` in one conditional PUT (create only if absent: a second writer of the
same version loses), and then the hint names it.

One snapshot a run: an ``overwrite`` whose added files are the run's new parts (read from their
footers, as ``add_files`` reads them: no rewrite) and whose deleted files are the parts that
leave the table. The snapshot's summary records the run's number (``RUN_PROPERTY``), so a run
that died after its commit and before its manifest is not committed twice by ``--resume``. The same
commit expires the snapshots older than ``--time-travel-days``, the time the removed parts are kept.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.fs as pafs

from job.errors import JobError
from job.output.formats import Commit, TableAt, TableState
from storage import Location, StorageError, storage_errors
from storage.conditional import create_exclusive, read_versioned, replace_if
from storage.resolve import s3_endpoint

NAMESPACE, NAME = "batch_inference", "predictions"  # the table's name in the throwaway in-memory catalog
HINT = "metadata/version-hint.text"
RUN_PROPERTY = "batch-inference.run-number"
# A commit that loses a race is refused, not rebased: pyiceberg would otherwise retry it on top of the other
# writer's snapshot, and a night is one commit on the version our last run left (another writer's: refused).
TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}


def require_ours(at: TableAt, schema: pa.Schema, state: TableState | None) -> None:
    """Refuse an Iceberg table of other columns than the run writes, or one another writer committed to since our last run."""
    current = _current(at.output)
    if current is not None:
        table = static_table(at.output, at.endpoint_url, current[0])
        require_columns(at.output.uri, table, schema)
        require_no_other_writer(at.output.uri, table, current[0], state)


def require_columns(where: str, table, schema: pa.Schema) -> None:
    """Refuse the Iceberg ``table`` (named ``where``) when its columns are not those the run writes."""
    columns = [field.name for field in table.schema().fields]
    if columns != schema.names:
        raise JobError(f"{where} is an Iceberg table of other columns ({', '.join(columns)}) than this run writes; "
                       "choose another --output, run with the options that made it, or pass --overwrite to replace it")


def require_no_other_writer(where: str, table, version: int, state: TableState | None) -> None:
    """Refuse the ``table`` at ``version`` when a writer other than our runs committed to it since run ``state.number``."""
    if state is None or state.version is None:
        return
    ours = 1 if run_number(table) == state.number + 1 else 0  # our commit whose run died after it
    if version > state.version + ours:
        raise JobError(f"{where}: another writer committed to the Iceberg table since run {state.number} (version "
                       f"{state.version}, now {version}); pass --overwrite to redo the table, or choose another --output")


def commit(at: TableAt, change: Commit) -> int | None:
    """Apply ``change`` as one Iceberg snapshot; returns the new metadata version, or None when that run committed it."""
    output, endpoint_url = at.output, at.endpoint_url
    current = _current(output)
    if current is not None and run_number(static_table(output, endpoint_url, current[0])) >= change.number:
        _point_hint(output, current)  # that run may have died before its hint named its version
        return None
    catalog = _catalog(output, endpoint_url)
    catalog.create_namespace(NAMESPACE)
    if current is None:
        table = catalog.create_table((NAMESPACE, NAME), schema=change.schema, location=table_uri(output),
                                     properties=TABLE_PROPERTIES)
    else:
        table = catalog.register_table((NAMESPACE, NAME), table_uri(output, f"metadata/v{current[0]}.metadata.json"))
    with one_line(output.uri, None if current is None else current[0]):
        with table.transaction() as tx:
            write_snapshot(tx, table, output, endpoint_url, change)
        written = catalog.load_table((NAMESPACE, NAME)).metadata_location
    return _publish(output, written, current)


def write_snapshot(tx, current, output: Location, endpoint_url: str | None, change: Commit) -> None:
    """The run's one snapshot, in the transaction ``tx`` on the table ``current`` (None: a table ``tx`` creates)."""
    from pyiceberg.io import load_file_io
    from pyiceberg.table import _parquet_files_to_data_files
    from pyiceberg.table.update.snapshot import ExpireSnapshots

    leaving = {table_uri(output, name) for name in change.removes}
    removed = [task.file for task in current.scan().plan_files() if task.file.file_path in leaving] if leaving else []
    if tx.table_metadata.name_mapping() is None:  # the parts carry no field ids: read them by name
        tx.set_properties(**{"schema.name-mapping.default": tx.table_metadata.schema().name_mapping.model_dump_json()})
    io = load_file_io(io_properties(output, endpoint_url), table_uri(output))
    properties = {RUN_PROPERTY: str(change.number), "batch-inference.run-id": change.run_id}
    with tx.update_snapshot(snapshot_properties=properties).overwrite() as snapshot:
        for data_file in _parquet_files_to_data_files(tx.table_metadata, [table_uri(output, n) for n in sorted(change.adds)], io):
            snapshot.append_data_file(data_file)
        for data_file in removed:
            snapshot.delete_data_file(data_file)
    if current is not None:
        # Snapshots past --time-travel-days go, as the parts only they read are deleted after that long
        # (job.output.commit): the metadata stays the size of the retention, not of the table's age.
        horizon = datetime.now(timezone.utc) - timedelta(days=change.time_travel_days)
        ExpireSnapshots(tx).older_than(horizon).commit()


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
    current = _current(at.output)
    return None if current is None else current[0]


def static_table(output: Location, endpoint_url: str | None, version: int | None = None):
    """The table at metadata ``version``; None: the latest, as any reader finds it (``metadata/version-hint.text``)."""
    from pyiceberg.table import StaticTable

    where = table_uri(output) if version is None else table_uri(output, f"metadata/v{version}.metadata.json")
    return StaticTable.from_metadata(where, properties=io_properties(output, endpoint_url))


def _publish(output: Location, written: str, current: tuple[int, str | None] | None) -> int:
    """Make pyiceberg's new metadata the next ``v<N>.metadata.json`` (create only if absent), then name it in the hint."""
    version = (current[0] if current is not None else 0) + 1
    source = written.removeprefix("s3://").removeprefix("file://")
    with storage_errors(output.uri), output.filesystem.open_input_stream(source) as f:
        data = f.read()
    target = output.join(f"metadata/v{version}.metadata.json")
    hint = str(version).encode()
    done = create_exclusive(output, target, data) is not None and (
        create_exclusive(output, output.join(HINT), hint) if current is None or current[1] is None
        else replace_if(output, output.join(HINT), hint, current[1]))
    if not done:
        raise JobError(f"{output.uri}: another writer committed Iceberg version {version} meanwhile; nothing of this run was "
                       "committed: run again with --resume")
    output.filesystem.delete_file(source)  # pyiceberg's own name for the same metadata: the v<N> file is the table's
    return version


def _point_hint(output: Location, current: tuple[int, str | None]) -> None:
    """Make the hint name version ``current[0]`` if it names an older one."""
    hint, wanted = output.join(HINT), str(current[0]).encode()
    with storage_errors(output.uri):
        found = read_versioned(output, hint)
        if found is None:
            create_exclusive(output, hint, wanted)
        elif found[0].strip() != wanted:
            replace_if(output, hint, wanted, found[1])


def _current(output: Location) -> tuple[int, str | None] | None:
    """(N, the hint's version: None when there is no hint) of the table's latest metadata, or None when there is no table.

    As in a Hadoop catalog the ``v<N>`` files decide and the hint is a hint: a commit that died between
    its ``v<N>`` and the hint's update is found here, so the hint is moved on by the next commit.
    """
    with storage_errors(output.uri):
        found = read_versioned(output, output.join(HINT))
        version = int(found[0].decode().strip()) if found is not None else 0
        while output.filesystem.get_file_info(output.join(f"metadata/v{version + 1}.metadata.json")).type == pafs.FileType.File:
            version += 1
    return None if version == 0 else (version, found[1] if found is not None else None)


def run_number(table) -> int:
    """The number of the run whose commit made ``table``'s current snapshot (0: none of ours)."""
    snapshot = table.current_snapshot()
    return int(snapshot.summary.additional_properties.get(RUN_PROPERTY, 0)) if snapshot is not None else 0


def _catalog(output: Location, endpoint_url: str | None):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("embedded", uri="sqlite:///:memory:", **io_properties(output, endpoint_url))


def io_properties(output: Location, endpoint_url: str | None) -> dict[str, str]:
    """pyiceberg's FileIO options: the same endpoint and region as our S3 filesystem (credentials from the environment)."""
    if not output.is_s3:
        return {}
    endpoint = s3_endpoint(endpoint_url)
    return {"s3.region": output.filesystem.region, **({"s3.endpoint": endpoint} if endpoint else {})}


def table_uri(output: Location, name: str = "") -> str:
    """The table's location (or a file ``name`` in it) as pyiceberg spells it."""
    base = f"s3://{output.path}" if output.is_s3 else f"file://{output.path}"
    return posixpath.join(base, name) if name else base
