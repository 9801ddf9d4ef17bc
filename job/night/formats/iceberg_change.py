"""What one night does inside an Iceberg transaction, whichever catalog then commits it (embedded or Glue).

``apply_change`` is applied to the table's LATEST metadata, never to the version the night planned
from: other writers (a DELETE for a privacy request, a compaction, another job's append) are
expected, and a commit that lost a race is applied again on top of theirs. It takes rows out by
their lineage, not by file name: every row whose ``source_file`` is leaving goes, in whatever data
file it lies now (a file of only such rows is dropped, one that compaction merged with staying
rows is rewritten without them: ``by_source``, as the Delta commit does); then the night's parts are
added as they are (their footers read, no rewrite). One snapshot a night, in one metadata version:
an add-only night is an ``append`` (fast append), as Iceberg's readers and maintenance expect; a
night with removals an ``overwrite`` (the leaving files out, the rewrites and the parts in).
``--overwrite`` is one ``overwrite`` snapshot too: every current data file out, the new parts in,
so a reader sees the old table or the new one.

The run's number is recorded in each snapshot's summary and in the table's properties (which
outlive expired snapshots): the next run numbers itself after it. The run's id is in its snapshot's summary too, so a
run that retries its own commit (an answer lost) finds it and does not commit twice.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pyarrow as pa

from job.errors import JobError
from job.night.formats import Commit, TableFiles, gone_before_commit
from job.night.formats.by_source import DataFile, discard, missing, rewrite_without, sources_of, split
from job.output.rows import SOURCE
from job.night.formats.withheld import Withheld, withhold
from storage import Location

RUN_PROPERTY = "batch-inference.run-number"  # in the snapshot summaries and the table's properties
RUN_ID_PROPERTY = "batch-inference.run-id"
NAME_MAPPING = "schema.name-mapping.default"  # how readers find the columns of parts written without field ids
FULL_SOURCE_METRICS = f"write.metadata.metrics.column.{SOURCE}"  # "full": its bounds not truncated to 16 characters


@dataclass(frozen=True)
class Changed:
    """What ``apply_change`` did to the data files (names relative to the output prefix)."""

    removed: tuple[str, ...]  # data files taken out of the table
    rewritten: tuple[str, ...]  # data files it wrote: files without the leaving (or withheld) rows of others
    withheld: Mapping[str, Withheld] = field(default_factory=dict)  # parts added as files without deleted rows
    live: frozenset[str] = frozenset()  # the table's data files once the change applies
    empty: bool = False  # nothing to add or take out: the transaction was left as it was


def apply_change(tx, io, change: Commit, output: Location, number: int) -> Changed:
    """Apply ``change`` as run ``number`` in the transaction ``tx`` (on the table's latest metadata). ``io``: pyiceberg's
    FileIO of the table, which lies at ``output``, where the parts (``change.adds``) are too."""
    base = table_uri(output)
    before = _by_name(data_files(tx), base)
    files = _listed_in(tx, before)
    whole, mixed = _leaving_files(tx, before, files, change, output)
    new = {part: rows for part, rows in change.adds.items() if change.overwrite or part not in before}
    if tx.table_metadata.current_snapshot() is not None and not (change.overwrite or new or whole or mixed):
        return Changed((), (), live=frozenset(before), empty=True)
    if change.overwrite:
        _use_schema(tx, change.schema)
    tx.set_properties(**{RUN_PROPERTY: str(number), **_metadata_properties(tx)})  # before the parts' statistics are read
    rewritten = dict(rewrite_without(output, name, change.leaving, change.run_id, change.schema) for name in mixed)
    withheld: dict[str, Withheld] = {}
    try:
        withheld = _withheld(tx, files, change, output, new)
        parts = {withheld[p].name if p in withheld else p for p in new}
        adds = _parts(tx, io, [f"{base}/{name}" for name in sorted({*parts, *rewritten})])
        out = [before[name] for name in (*whole, *mixed)]
        summary = {RUN_PROPERTY: str(number), RUN_ID_PROPERTY: change.run_id}
        if out:  # one overwrite snapshot: the leaving files out, the rewrites and the parts in
            with tx.update_snapshot(snapshot_properties=summary).overwrite() as snapshot:
                for data_file in out:
                    snapshot.delete_data_file(data_file)
                for data_file in adds:
                    snapshot.append_data_file(data_file)
        elif adds:  # an add-only night: a fast append, as readers and maintenance expect of one
            with tx.update_snapshot(snapshot_properties=summary).fast_append() as snapshot:
                for data_file in adds:
                    snapshot.append_data_file(data_file)
        _expire(tx, change.time_travel_days)
    except BaseException:
        discard(output, (*rewritten, *(w.name for w in withheld.values())))  # no version names them
        raise
    removed = tuple(sorted((*whole, *mixed)))
    live = frozenset((set(before) - set(removed)) | parts | set(rewritten)) if not change.overwrite else frozenset(parts)
    return Changed(removed, tuple(sorted((*rewritten, *(w.name for w in withheld.values())))), withheld, live)


def _withheld(tx, files: list[DataFile], change: Commit, output: Location, new: Mapping[str, int]) -> dict[str, Withheld]:
    """The night's new parts that must leave out rows another writer deleted (``job.night.formats.withheld``), on the
    transaction's version; the night planned on the snapshot ``change.planned_version`` names."""
    watched = {part: w for part, w in change.watched.items() if part in new}
    if not watched or change.overwrite:
        return {}
    if gone := missing(output, sorted(watched)):
        raise gone_before_commit(output.uri, len(gone), gone[0])
    current = tx.table_metadata.current_snapshot()
    moved = change.planned_version is not None and (current is None or current.snapshot_id != change.planned_version)
    return withhold(output, [f for f in files if f.path not in change.keep], moved, watched, change.run_id, change.schema)


def _by_name(files: dict, base: str) -> dict:
    """``files`` (URI -> data file) by their names relative to the table's location ``base``; a file another writer
    put outside it keeps its whole URI (and leaves the table only with --overwrite: this job cannot rewrite it)."""
    return {path.removeprefix(f"{base}/") if path.startswith(f"{base}/") else path: f for path, f in files.items()}


def _listed_in(tx, before: dict) -> list[DataFile]:
    """The current data files under the table's location (``before``, by name), with their source_file bounds."""
    if tx.table_metadata.current_snapshot() is None:
        return []
    field_id = tx.table_metadata.schema().find_field(SOURCE).field_id
    return [DataFile(name, *_bounds(f, field_id)) for name, f in before.items() if "://" not in name]


def _leaving_files(tx, before: dict, files: list[DataFile], change: Commit, output: Location) -> tuple[list[str], list[str]]:
    """Of the current data files (``before``, by name; ``files`` with their bounds), those whose every row leaves
    (``overwrite``: all), and those holding leaving rows beside staying ones, judged by the rows' source
    (``by_source.split``); the night's own parts (``change.keep``) never."""
    if change.overwrite:
        return sorted(before), []
    require_no_deletes(output.uri, _deleted_through(tx._scan(), table_uri(output)), files, change.known, change.leaving)
    taken = split(files, change.known, change.leaving, lambda name: sources_of(output, name), change.keep)
    return list(taken.whole), list(taken.mixed)


def require_no_deletes(where: str, deleted: set[str], files: list[DataFile], known, leaving) -> None:
    """Refuse a night that must read a data file rows of which other writers deleted through delete files (Iceberg's
    merge-on-read): the night reads and rewrites data files as they are, so those rows would come back."""
    read = [file.path for file in files if file.path not in known and leaving and file.may_hold(leaving)]
    touched = sorted(path for path in read if path in deleted)
    if touched:
        raise JobError(f"{where}: this night must take rows out of {touched[0]}, which other writers deleted rows of "
                       "through delete files (merge-on-read); the job reads data files as they are, so those rows would "
                       "come back: compact the table first (rewrite_data_files applies the deletes), or set "
                       "write.delete.mode=copy-on-write for the writers that delete")


def _deleted_through(scan, base: str) -> set[str]:
    """The data files (by name relative to the table's location ``base``) that delete files apply to."""
    return {name for name, task in _by_name({t.file.file_path: t for t in scan.plan_files()}, base).items()
            if task.delete_files}


def require_writable_table(table, output: Location, leaving, known) -> None:
    """Before any work: refuse a night on the pyiceberg ``table`` that its delete files forbid (``require_no_deletes``)."""
    if table.metadata.current_snapshot() is None or not leaving:
        return
    field_id = table.metadata.schema().find_field(SOURCE).field_id
    tasks = _by_name({t.file.file_path: t for t in table.scan().plan_files()}, table_uri(output))
    files = [DataFile(name, *_bounds(t.file, field_id)) for name, t in tasks.items() if "://" not in name]
    require_no_deletes(output.uri, {name for name, t in tasks.items() if t.delete_files}, files, known, leaving)


def listed_files(table, output: Location) -> list[DataFile]:
    """The data files of a pyiceberg ``table``'s current snapshot that lie under the table's location ``output``,
    with their source_file bounds."""
    if table.metadata.current_snapshot() is None:
        return []
    field_id = table.metadata.schema().find_field(SOURCE).field_id
    files = _by_name({task.file.file_path: task.file for task in table.scan().plan_files()}, table_uri(output))
    return [DataFile(name, *_bounds(f, field_id)) for name, f in files.items() if "://" not in name]


def table_listing(table, output: Location) -> TableFiles:
    """``listed_files`` of a pyiceberg ``table``, and the id of its current snapshot (the version a night plans on)."""
    snapshot = table.metadata.current_snapshot()
    return TableFiles(listed_files(table, output), snapshot.snapshot_id if snapshot is not None else None)


def _bounds(data_file, field_id: int) -> tuple[str | None, str | None]:
    """The source column's lower and upper bounds as the manifest records them (truncated ones still enclose it)."""
    low, high = (data_file.lower_bounds or {}).get(field_id), (data_file.upper_bounds or {}).get(field_id)
    if low is None or high is None:
        return None, None
    return low.decode("utf-8", errors="replace"), high.decode("utf-8", errors="replace")


def _metadata_properties(tx) -> dict[str, str]:
    """How readers find the columns of parts written without field ids (the name mapping, kept to the current
    schema), and the source column's bounds kept whole (not cut to 16 characters): exact bounds rule out more files
    a night would otherwise read to find leaving rows."""
    return {NAME_MAPPING: tx.table_metadata.schema().name_mapping.model_dump_json(), FULL_SOURCE_METRICS: "full"}


def table_uri(output: Location, name: str = "") -> str:
    """The table's location (or a file ``name`` in it) as pyiceberg spells it."""
    base = f"s3://{output.path}" if output.is_s3 else f"file://{output.path}"
    return posixpath.join(base, name) if name else base


def committed_by(metadata, run_id: str) -> bool:
    """Whether one of the table's snapshots is the run ``run_id``'s commit (its summary carries the run's id)."""
    return any(s.summary is not None and s.summary.additional_properties.get(RUN_ID_PROPERTY) == run_id
               for s in metadata.snapshots)


def committed_run(metadata) -> int:
    """The highest run number that committed to the table (0: none of ours), from its properties and snapshots."""
    numbers = [int(metadata.properties.get(RUN_PROPERTY, 0))]
    numbers += [int(s.summary.additional_properties.get(RUN_PROPERTY, 0)) for s in metadata.snapshots if s.summary]
    return max(numbers)


def require_columns(where: str, table, schema: pa.Schema) -> None:
    """Refuse the Iceberg ``table`` (named ``where``) when its columns are not those the run writes."""
    columns = [field.name for field in table.schema().fields]
    if columns != schema.names:
        raise JobError(f"{where} is an Iceberg table of other columns ({', '.join(columns)}) than this run writes; "
                       "choose another --output, run with the options that made it, or pass --overwrite to replace it")


def require_same_columns(where: str, metadata, change: Commit) -> None:
    """A true conflict: another writer changed the columns since the night began (a rebase cannot apply our parts)."""
    columns = [field.name for field in metadata.schema().fields]
    if not change.overwrite and columns != change.schema.names:
        raise JobError(f"{where}: {other_commit(metadata)} changed the table's columns to ({', '.join(columns)}) while "
                       "this run wrote its parts; nothing of this run was committed: pass --overwrite to redo the table")


def other_commit(metadata) -> str:
    """The table's latest commit, in words: its snapshot id, operation and writer."""
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return "another writer's commit (no snapshot)"
    extra = snapshot.summary.additional_properties if snapshot.summary else {}
    writer = extra.get(RUN_ID_PROPERTY) or extra.get("engine-name") or "another writer"
    operation = snapshot.summary.operation.value if snapshot.summary else "commit"
    return f"snapshot {snapshot.snapshot_id} ({operation}, by {writer})"


def iceberg_schema(schema: pa.Schema):
    """``schema`` as Iceberg's, its field ids assigned as a new table's (``job.output.rows.with_field_ids`` gives the
    parts the same ids)."""
    from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, visit_pyarrow
    from pyiceberg.schema import assign_fresh_schema_ids

    return assign_fresh_schema_ids(visit_pyarrow(schema, _ConvertToIcebergWithoutIDs()))


def data_files(tx) -> dict:
    """The data files of the transaction's current snapshot: path -> pyiceberg ``DataFile``."""
    if tx.table_metadata.current_snapshot() is None:
        return {}
    return {task.file.file_path: task.file for task in tx._scan().plan_files()}


def _use_schema(tx, schema: pa.Schema) -> None:
    """--overwrite with other columns: the new version's schema is the parts' (their field ids), in the same commit."""
    from pyiceberg.schema import Schema
    from pyiceberg.table.update import AddSchemaUpdate, SetCurrentSchemaUpdate

    wanted = iceberg_schema(schema)
    if wanted.as_struct() == tx.table_metadata.schema().as_struct():
        return
    next_id = max(s.schema_id for s in tx.table_metadata.schemas) + 1
    new = Schema(*wanted.fields, schema_id=next_id, identifier_field_ids=wanted.identifier_field_ids)
    tx._apply((AddSchemaUpdate(schema=new), SetCurrentSchemaUpdate(schema_id=-1)))


def _parts(tx, io, paths: list[str]) -> list:
    """The night's parts as data files, from their footers (``add_files`` without its checks of the table's files)."""
    from pyiceberg.table import _parquet_files_to_data_files

    return list(_parquet_files_to_data_files(tx.table_metadata, paths, io)) if paths else []


def _expire(tx, time_travel_days: float) -> None:
    """Snapshots past --time-travel-days go, as the parts only they read are deleted after that long
    (job.night.commit): the metadata stays the size of the retention, not of the table's age."""
    from pyiceberg.table.update.snapshot import ExpireSnapshots

    if len(tx.table_metadata.snapshots) > 1:
        horizon = datetime.now(timezone.utc) - timedelta(days=time_travel_days)
        ExpireSnapshots(tx).older_than(horizon).commit()
