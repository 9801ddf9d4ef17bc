"""``--table-format delta``: the run's parts committed as one version of a Delta Lake table, through delta-rs.

No Spark and no JVM on the driver (``deltalake``), so every engine gets it. The parts are added
where they lie (no rewrite): one ``add`` action a part, with its size and row count, and one
``remove`` action for each part that leaves the table, in the same commit. The commit carries an
application transaction (``txn``: app id ``APP_ID``, version = the run's number), as Spark's
``txnAppId``/``txnVersion`` do: a run that died after its commit and before its manifest is
finished by ``--resume``, which finds its number already in the log and does not commit again.

The log is checkpointed every ``CHECKPOINT_INTERVAL`` commits, so reading the latest version (and
the next night's commit) reads one checkpoint and a few JSON files, not a year of them. Removed parts
stay on storage for ``--time-travel-days`` (the table's ``delta.deletedFileRetentionDuration``): a
reader of an older version still reads them; ``job.finish`` deletes them after that.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pyarrow.fs as pafs

from job.errors import JobError
from job.output.formats import APP_ID, Commit, TableAt, TableState
from storage import Location, StorageError, storage_errors
from storage.resolve import s3_endpoint

CHECKPOINT_INTERVAL = 10  # commits between checkpoints of the log
STAT_THREADS = 16
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def require_ours(at: TableAt, schema, state: TableState | None) -> None:
    """Refuse a Delta table whose schema is not the run's, or that another writer committed to since our last run."""
    from deltalake import Schema

    output = at.output
    table = _open(output, at.endpoint_url)
    if table is None:
        return
    where = output.uri
    if table.schema().to_json() != Schema.from_arrow(schema).to_json():
        theirs = ", ".join(f.name for f in table.schema().fields)
        raise JobError(f"{where} is a Delta table of other columns ({theirs}) than this run writes; choose another "
                       "--output, run with the options that made it, or pass --overwrite to replace it")
    if state is not None and state.version is not None:
        ours = 1 if (table.transaction_version(APP_ID) or 0) == state.number + 1 else 0  # our commit whose run died after it
        if table.version() > state.version + ours:
            raise JobError(f"{where}: another writer committed to the Delta table since run {state.number} (version "
                           f"{state.version}, now {table.version()}); pass --overwrite to redo the table, or choose another --output")


def commit(at: TableAt, change: Commit) -> int | None:
    """Apply ``change`` as one Delta commit; returns the new version, or None when run ``change.number`` committed it already."""
    from deltalake import CommitProperties, Schema, Transaction
    from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

    output, endpoint_url = at.output, at.endpoint_url
    uri, options = _uri(output, endpoint_url)
    table = _open(output, endpoint_url)
    if table is not None and (table.transaction_version(APP_ID) or 0) >= change.number:
        return None
    now_ms = int(time.time() * 1000)
    sizes = _sizes(output, [*change.adds, *change.removes])
    adds = [AddAction(name, sizes[name], {}, now_ms, True, json.dumps({"numRecords": rows}))
            for name, rows in sorted(change.adds.items())]
    removes = [RemoveAction(name, True, now_ms, sizes.get(name)) for name in change.removes]
    properties = CommitProperties(custom_metadata={"run_id": change.run_id},
                                  app_transactions=[Transaction(APP_ID, change.number)])
    with _one_line(output.uri, f"the Delta commit failed; the table stays at version "
                               f"{'none' if table is None else table.version()}: run again with --resume"):
        if table is None:
            create_table_with_add_actions(uri, Schema.from_arrow(change.schema), adds, mode="error",
                                          configuration=_configuration(change.time_travel_days), storage_options=options,
                                          commit_properties=properties)
        else:
            table.create_write_transaction([*adds, *removes], "append", change.schema, commit_properties=properties)
    return _open(output, endpoint_url).version()


@contextmanager
def _one_line(uri: str, what: str) -> Iterator[None]:
    """delta-rs's errors (a store error, a conflicting commit) as one line naming the table, what happened and the fix."""
    from deltalake.exceptions import DeltaError

    try:
        yield
    except (DeltaError, OSError) as e:
        # delta-rs colours its error chains for a terminal: the line keeps the words, not the escapes.
        said = " ".join(ANSI_ESCAPE.sub("", str(e)).split())
        raise StorageError(f"{uri}: {what} ({said[:300]})") from e


def _configuration(days: float) -> dict[str, str]:
    hours = max(1, round(days * 24))
    return {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
            "delta.deletedFileRetentionDuration": f"interval {hours} hours",
            # The log is kept at least as long as the parts it names, so time travel reaches them.
            "delta.logRetentionDuration": f"interval {max(hours, 30 * 24)} hours"}


def _open(output: Location, endpoint_url: str | None):
    """The Delta table at the prefix, or None when there is none yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    uri, options = _uri(output, endpoint_url)
    with _one_line(output.uri, "the Delta table cannot be read"):
        try:
            return DeltaTable(uri, storage_options=options)
        except TableNotFoundError:
            return None


def _uri(output: Location, endpoint_url: str | None) -> tuple[str, dict[str, str] | None]:
    """The table's URI and delta-rs's storage options: the same endpoint and region as our S3 filesystem."""
    if not output.is_s3:
        return output.path, None
    options = {"AWS_REGION": output.filesystem.region}
    endpoint = s3_endpoint(endpoint_url)
    if endpoint:
        options |= {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": str(endpoint.startswith("http://")).lower()}
    return f"s3://{output.path}", options


def _sizes(output: Location, names: list[str]) -> dict[str, int]:
    """Each part's size in bytes (a Delta add action records it)."""
    paths = [output.join(name) for name in names]
    with storage_errors(output.uri), ThreadPoolExecutor(STAT_THREADS) as pool:
        infos = list(pool.map(output.filesystem.get_file_info, paths))
    return {name: info.size for name, info in zip(names, infos) if info.type == pafs.FileType.File}


def current_version(at: TableAt) -> int | None:
    """The table's latest version (None: no table)."""
    table = _open(at.output, at.endpoint_url)
    return None if table is None else table.version()
