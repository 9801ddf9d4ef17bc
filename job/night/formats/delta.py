"""``--table-format delta``: the run's parts committed as one version of a shared Delta Lake table, through delta-rs.

No Spark and no JVM on the driver (``deltalake``), so every engine gets it. The log is the truth:
each night reads the table's latest version, takes out the rows of the input files leaving it by
their lineage (``job.night.formats.by_source``: our parts whole, a file OPTIMIZE made of ours and
others' rewritten without them) and adds its parts where they lie (no rewrite), all in one commit:
``add`` actions with their row counts and the ``source_file`` bounds (for the next night's pruning
and the platform's data skipping), ``remove`` actions for what leaves. delta-rs's optimistic
concurrency rebases the commit over another writer's that does not conflict; one that does (it
removed a file this commit removes) makes the night read the new version and try again.

The commit carries application transactions (``txn``), as Spark's ``txnAppId``/``txnVersion`` do: app id
``APP_ID`` with the run's number (one more than the log's last), and one of the run's own id, with the run's id in its
commitInfo too: a night whose commit landed before its manifest was lost is seen for what it is by the next
(``job.night.strays``), which adopts its parts and commits only its own work; no night takes another's
number. ``--overwrite`` is one ``overwrite`` commit: readers see the old version or the new one.

The log is checkpointed every ``CHECKPOINT_INTERVAL`` commits, so reading the latest version (and
the next night's commit) reads one checkpoint and a few JSON files, not a year of them. Removed parts
stay on storage for ``--time-travel-days`` (the table's ``delta.deletedFileRetentionDuration``): a
reader of an older version still reads them; ``job.night.commit`` deletes ours after that.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from job.errors import JobError
from job.night.formats import APP_ID, Applied, Commit, TableAt, TableFiles, TableState, gone_before_commit
from job.night.formats import delta_rules
from job.night.formats.by_source import DataFile, Leaving, discard, missing, rewrite_without, sources_of, split
from job.night.formats.withheld import Withheld, withhold
from job.output.rows import SOURCE
from storage import Location, StorageError, storage_errors
from storage.resolve import s3_endpoint

CHECKPOINT_INTERVAL = 10  # commits between checkpoints of the log
COMMIT_TRIES = 5  # reads of the latest version a night's commit makes while other writers' commits conflict with it
STAT_THREADS = 16
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def require_ours(at: TableAt, schema, state: TableState | None) -> None:
    """Refuse a Delta table whose schema is not the run's, or whose log our last run recorded and is gone now."""
    from deltalake import Schema

    output = at.output
    table = _open(output, at.endpoint_url)
    where = output.uri
    if table is None:
        if state is not None and state.version is not None:
            raise JobError(f"{where}: the manifest records Delta version {state.version}, but there is no Delta log "
                           "(_delta_log/) now; the table is never rebuilt from the job's own records: restore the log, "
                           "or pass --overwrite to redo the table")
        return
    if _columns(table.schema()) != _columns(Schema.from_arrow(schema)):
        theirs = ", ".join(f.name for f in table.schema().fields)
        raise JobError(f"{where} is a Delta table of other columns ({theirs}) than this run writes; choose another "
                       "--output, run with the options that made it, or pass --overwrite to replace it")


def require_writable(at: TableAt, removes: bool, leaving: Leaving, known: Mapping[str, str]) -> None:
    """Refuse, before any work, a night the table's rules forbid (``delta_rules.require_writable``)."""
    table = _open(at.output, at.endpoint_url)
    if table is not None:
        delta_rules.require_writable(table, at.output.uri, removes, bool(_reads_others(_data_files(_listed(table)), known,
                                                                                       leaving)))


def _reads_others(files: list[DataFile], known: Mapping[str, str], leaving: Leaving) -> list[str]:
    """The data files not ours whose statistics leave room for leaving rows: those the night must read."""
    return [file.path for file in files if file.path not in known and leaving and file.may_hold(leaving)]


def _columns(schema) -> list[dict]:
    """A Delta schema's columns: names and types (not their metadata, whose keys writers order as they like, nor their
    nullability: a NOT NULL the platform set is one of the table's rules, held to the night's rows by delta_rules)."""
    return [{key: value for key, value in field.items() if key not in ("metadata", "nullable")}
            for field in json.loads(schema.to_json())["fields"]]


def commit(at: TableAt, change: Commit) -> Applied:
    """Apply ``change`` as one Delta commit on the table's latest version, read again after a conflicting commit."""
    from deltalake.exceptions import CommitFailedError

    last: Exception | None = None
    for _ in range(COMMIT_TRIES):
        table = _open(at.output, at.endpoint_url)
        if table is not None and _committed_by(table, change.run_id):  # this run's commit landed, its answer did not
            return Applied(table.version(), again=True, live=frozenset(_listed(table).column("path").to_pylist()))
        ours = (table.transaction_version(APP_ID) or 0) if table is not None else 0
        try:
            return _commit_on(table, at, change, max(change.number, ours + 1))
        except CommitFailedError as e:  # another writer removed what this commit removes: read its version, again
            last = e
    raise StorageError(f"{at.output.uri}: the Delta commit conflicted {COMMIT_TRIES} times with other writers' commits "
                       f"({_said(last)}); nothing of this run was committed: run again with --resume") from last


def _committed_by(table, run_id: str) -> bool:
    """Whether the run ``run_id`` committed to the table: its own application transaction is in the log's state."""
    return table.transaction_version(_run_app(run_id)) is not None


def _run_app(run_id: str) -> str:
    """The application id of one run's transaction: a commit of the run is found by it, in the log's state (read with
    the table, as Spark's streaming queries find their own ``txn``), never by a listing of its commits."""
    return f"{APP_ID}/run/{run_id}"


def _commit_on(table, at: TableAt, change: Commit, number: int) -> Applied:
    """One try of the commit on ``table`` (None: there is no table yet), as run ``number``."""
    from deltalake import CommitProperties, Schema, Transaction
    from deltalake.transaction import create_table_with_add_actions

    output, endpoint_url = at.output, at.endpoint_url
    uri, options = _uri(output, endpoint_url)
    # No retry inside delta-rs: its conflict check lets a commit whose removes another writer's commit already made
    # (an OPTIMIZE of the same parts) land on top of it, the compaction's copy of the leaving rows kept. A commit that
    # lost the race fails instead, and ``commit`` reads the new version and computes the night's change again.
    properties = CommitProperties(custom_metadata={"run_id": change.run_id}, max_commit_retries=0,
                                  app_transactions=[Transaction(APP_ID, number), Transaction(_run_app(change.run_id), 1)])
    now_ms = int(time.time() * 1000)
    with _one_line(output.uri, f"the Delta commit failed; the table stays at version "
                               f"{'none' if table is None else table.version()}: run again with --resume"):
        if table is None:
            adds = _adds(output, change.adds, change.bounds, now_ms)
            create_table_with_add_actions(uri, Schema.from_arrow(change.schema), adds, mode="error",
                                          configuration=_configuration(change.time_travel_days), storage_options=options,
                                          commit_properties=properties)
            return Applied(_open(output, endpoint_url).version(), number=number, live=frozenset(change.adds))
        if change.overwrite:  # delta-rs removes every current file itself: one version, the old table or the new
            removed = tuple(sorted(_listed(table).column("path").to_pylist()))
            delta_rules.require_writable(table, output.uri, True, False)  # the table's rules as they are now
            delta_rules.check_rows(table, output, sorted(change.adds), change.schema)
            table.create_write_transaction(_adds(output, change.adds, change.bounds, now_ms), "overwrite", change.schema,
                                           commit_properties=properties)
            return Applied(_open(output, endpoint_url).version(), removed, number=number, live=frozenset(change.adds))
        night = _changes(table, at, change, now_ms)
        if not night.actions:  # nothing to add or take out: no version
            return Applied(table.version(), number=number, live=night.live)
        delta_rules.check_rows(table, output, sorted(change.adds), change.schema)
        try:
            table.create_write_transaction(night.actions, "append", change.schema, commit_properties=properties)
        except BaseException:
            discard(output, night.written)  # no version names them
            raise
    return Applied(_open(output, endpoint_url).version(), night.removed, number=number, withheld=night.withheld,
                   live=night.live)


@dataclass(frozen=True)
class _Night:
    """A night's change on one version of the table, as Delta actions."""

    actions: list  # add and remove actions
    removed: tuple[str, ...]  # data files taken out
    withheld: dict[str, Withheld]  # parts committed as files without the rows another writer deleted
    written: tuple[str, ...]  # the files this try wrote (rewrites): no version names them if it fails
    live: frozenset[str]  # the table's data files once the actions apply


def _changes(table, at: TableAt, change: Commit, now_ms: int) -> _Night:
    """The add and remove actions of a night on ``table``'s version: its parts in (those the log does not list yet,
    less the rows another writer deleted), the leaving rows out."""
    from deltalake.transaction import RemoveAction

    output, listed = at.output, _listed(table)
    files = _data_files(listed)
    paths = set(listed.column("path").to_pylist())
    sizes = dict(zip(listed.column("path").to_pylist(), listed.column("size_bytes").to_pylist()))
    delta_rules.require_writable(table, output.uri, bool(change.leaving), bool(_reads_others(files, change.known, change.leaving)))
    taken = split(files, change.known, change.leaving, lambda path: sources_of(output, path), change.keep)
    rewritten = dict(rewrite_without(output, path, change.leaving, change.run_id, change.schema) for path in taken.mixed)
    moved = change.planned_version is not None and table.version() != change.planned_version
    new = {part: rows for part, rows in change.adds.items() if part not in paths}
    if gone := missing(output, sorted(new)):
        raise gone_before_commit(output.uri, len(gone), gone[0])
    watched = {part: w for part, w in change.watched.items() if part in new}
    withheld = withhold(output, [f for f in files if f.path not in change.keep], moved, watched, change.run_id, change.schema)
    adds = {**{withheld[p].name if p in withheld else p: withheld[p].rows if p in withheld else rows
               for p, rows in new.items()}, **rewritten}
    bounds = {**change.bounds, **{w.name: change.bounds[p] for p, w in withheld.items() if p in change.bounds}}
    removed = tuple(sorted([*taken.whole, *taken.mixed]))
    actions = [*_adds(output, adds, bounds, now_ms), *(RemoveAction(name, True, now_ms, sizes.get(name)) for name in removed)]
    written = (*rewritten, *(w.name for w in withheld.values()))
    return _Night(actions, removed, withheld, written, frozenset((paths - set(removed)) | set(adds)))


def data_files(at: TableAt) -> TableFiles:
    """The data files of the table's latest version, with their source_file bounds, and its version (none: no table)."""
    table = _open(at.output, at.endpoint_url)
    return TableFiles() if table is None else TableFiles(_data_files(_listed(table)), table.version())


def _data_files(listed: pa.Table) -> list[DataFile]:
    paths = listed.column("path").to_pylist()
    return [DataFile(path, low, high) for path, low, high in zip(paths, *(_stat(listed, kind) for kind in ("min", "max")))]


def _listed(table) -> pa.Table:
    """The data files of ``table``'s version as its log lists them: path, size, row count, column bounds."""
    return pa.table(table.get_add_actions(flatten=True))


def _stat(listed: pa.Table, kind: str) -> list:
    """Each file's ``kind`` (min, max) of the source column, as the log records it (None where it does not)."""
    column = f"{kind}.{SOURCE}"
    return listed.column(column).to_pylist() if column in listed.column_names else [None] * listed.num_rows


def _adds(output: Location, rows: Mapping[str, int], bounds: Mapping[str, tuple[str, str]], now_ms: int) -> list:
    """An add action a file: its size, rows and, for a part of ours, its sources' bounds (min and max)."""
    from deltalake.transaction import AddAction

    sizes = _sizes(output, list(rows))
    missing = sorted(name for name in rows if name not in sizes)
    if missing:
        raise gone_before_commit(output.uri, len(missing), missing[0])
    actions = []
    for name, count in sorted(rows.items()):
        stats = {"numRecords": count}
        if name in bounds:
            low, high = bounds[name]
            stats |= {"minValues": {SOURCE: low}, "maxValues": {SOURCE: high}, "nullCount": {SOURCE: 0}}
        actions.append(AddAction(name, sizes[name], {}, now_ms, True, json.dumps(stats)))
    return actions


def _said(error: Exception | None) -> str:
    return " ".join(ANSI_ESCAPE.sub("", str(error)).split())[:300]


@contextmanager
def _one_line(uri: str, what: str) -> Iterator[None]:
    """delta-rs's errors (a store error, a conflicting commit) as one line naming the table, what happened and the fix."""
    from deltalake.exceptions import CommitFailedError, DeltaError

    try:
        yield
    except CommitFailedError:
        raise  # another writer's commit came first: ``commit`` reads its version and tries again
    except (DeltaError, OSError) as e:
        # delta-rs colours its error chains for a terminal: the line keeps the words, not the escapes.
        raise StorageError(f"{uri}: {what} ({_said(e)})") from e


def _configuration(days: float) -> dict[str, str]:
    hours = max(1, round(days * 24))
    return {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
            "delta.deletedFileRetentionDuration": f"interval {hours} hours",
            # The log is kept at least as long as the parts it names, so time travel reaches them.
            "delta.logRetentionDuration": f"interval {max(hours, 30 * 24)} hours"}


def _open(output: Location, endpoint_url: str | None):
    """The Delta table at the prefix (its latest version), or None when there is none yet."""
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
