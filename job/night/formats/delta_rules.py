"""A Delta table's own rules, which a writer owes it: checked by the night, never bypassed or misreported.

The night commits its parts as add actions (``job.night.formats.delta``), not through delta-rs's write
path, so the data checks delta-rs's writer would run are this module's to run:

- ``require_writable``, before any work: the table's writer features (the protocol's list, or those its
  writer version implies) must each be one the night honours (``FEATURES``), with one line naming the
  first that is not; ``delta.appendOnly`` refuses a night that must take rows out; column mapping by name
  or id refuses every night (our parts name their columns as the log's logical names); deletion vectors
  refuse a night that must read a file another writer made (delta-rs 1.6 cannot read them: rows they
  deleted would come back).
- ``check_rows``, after the final check and before the commit: the night's new parts against the
  table's CHECK constraints (``delta.constraints.<name>``), column invariants (``delta.invariants``) and
  NOT NULL columns, evaluated by delta-rs's own SQL engine (DataFusion, ``QueryBuilder``) over the
  columns the rules name, read from the parts into a throwaway local Delta table. A row that breaks a rule is a ``DataError`` naming the rule, the count and
  an example id; nothing is committed. As Spark's Delta writer does, a CHECK whose value is NULL breaks it.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.dataset as ds

from job.errors import DataError, JobError
from storage import Location, storage_errors

# Writer features a night honours, and how. A table requiring any other is refused before any work.
FEATURES = {
    "appendOnly": "a night that must take rows out is refused (require_writable)",
    "invariants": "checked on the night's rows before the commit (check_rows)",
    "checkConstraints": "checked on the night's rows before the commit (check_rows)",
    "changeDataFeed": "the night's removes and adds are whole files, which change data feed readers read as such",
    "generatedColumns": "none of the job's columns is generated; a table with one has other columns, refused as such",
    "identityColumns": "none of the job's columns is an identity column; a table with one is refused as such",
    "columnMapping": "only with delta.columnMapping.mode none (require_writable)",
    "deletionVectors": "a night that must read another writer's file is refused (require_writable)",
    "timestampNtz": "the job's one timestamp (made_at) is in UTC",
    "v2Checkpoint": "delta-rs writes the log's checkpoints",
    "vacuumProtocolCheck": "the job vacuums nothing of the table's",
}
# What a protocol below writer version 7 requires: each version adds features (the Delta protocol's table).
LEGACY_FEATURES = {2: ("appendOnly", "invariants"), 3: ("checkConstraints",),
                   4: ("changeDataFeed", "generatedColumns"), 5: ("columnMapping",), 6: ("identityColumns",)}
CONSTRAINT_PREFIX = "delta.constraints."
INVARIANTS = "delta.invariants"


@dataclass(frozen=True)
class Rule:
    """One rule rows must keep: a SQL condition a row must make true."""

    name: str  # as the table names it: "CHECK x_pos", "invariant on label", "NOT NULL label"
    condition: str  # a SQL boolean expression over the row's columns


def writer_features(table) -> list[str]:
    """The writer features a table's protocol requires: listed (writer version 7) or implied by its version."""
    protocol = table.protocol()
    if protocol.min_writer_version >= 7:
        return list(protocol.writer_features or ())
    return [name for version, names in LEGACY_FEATURES.items() if protocol.min_writer_version >= version for name in names]


def require_writable(table, where: str, removes: bool, reads_others: bool) -> None:
    """Refuse (one line, before any work) a night the table's rules forbid: ``removes``, the night takes rows out
    (replaced or gone input, --overwrite); ``reads_others``, it must read a data file another writer made."""
    features = writer_features(table)
    unknown = [name for name in features if name not in FEATURES]
    if unknown:
        raise JobError(f"{where} is a Delta table requiring the writer feature {unknown[0]}, which this job's commits "
                       "cannot honour (delta-rs 1.6 refuses to write it); write this table with a writer that supports "
                       f"it, or choose another --output for the job's table")
    configuration = table.metadata().configuration
    if removes and configuration.get("delta.appendOnly", "false").lower() == "true":
        raise JobError(f"{where} is append-only (delta.appendOnly=true), and this night must take rows out of it (input "
                       "files replaced or gone, or --overwrite); the job never bypasses the table's rule: set "
                       "delta.appendOnly=false on the table, or choose another --output")
    mode = configuration.get("delta.columnMapping.mode", "none")
    if mode != "none":
        raise JobError(f"{where} maps its columns by {mode} (delta.columnMapping.mode={mode}); the job's parts name "
                       "their columns as the table's logical names, which such a table does not read: choose another "
                       "--output, or recreate the table without column mapping")
    if reads_others and table.protocol().reader_features and "deletionVectors" in table.protocol().reader_features:
        raise JobError(f"{where} has deletion vectors, and this night must take rows out of a file another writer "
                       "made (a compaction, a DELETE); delta-rs 1.6 cannot read deletion vectors, so rows deleted "
                       "through one would come back: apply them (REORG TABLE ... APPLY (PURGE)) and disable the "
                       "feature, or choose another --output")


def rules(table) -> list[Rule]:
    """The table's CHECK constraints, column invariants and NOT NULL columns, as SQL conditions on a row."""
    found = [Rule(f"CHECK {key.removeprefix(CONSTRAINT_PREFIX)} ({expression})", expression)
             for key, expression in sorted(table.metadata().configuration.items()) if key.startswith(CONSTRAINT_PREFIX)]
    for field in json.loads(table.schema().to_json())["fields"]:
        name = field["name"]
        invariant = (field.get("metadata") or {}).get(INVARIANTS)
        if invariant:
            expression = json.loads(invariant)["expression"]["expression"]
            found.append(Rule(f"invariant on {name} ({expression})", expression))
        if not field.get("nullable", True):
            found.append(Rule(f"NOT NULL {name}", f"`{name}` IS NOT NULL"))
    return found


def check_rows(table, output: Location, parts: Sequence[str], schema: pa.Schema) -> None:
    """Hold the night's ``parts`` (names under ``output``, in ``schema``) to the table's rules; a ``DataError`` names
    the first rule broken, how many rows break it and one of their ids."""
    found = [rule for rule in rules(table) if rule.condition != "`id` IS NOT NULL"]  # every row of ours has an id
    if not found or not parts:
        return
    columns = ["id", *sorted({name for rule in found for name in schema.names if name != "id" and _reads(rule, name)})]
    with tempfile.TemporaryDirectory(prefix="delta-rules-") as folder:
        night = _night_table(output, parts, schema, columns, folder)
        for rule in found:
            broken, example = _broken(night, rule, output.uri)
            if broken:
                raise DataError(f"{output.uri}: {broken} of the night's rows break the Delta table's {rule.name} (e.g. "
                                f"id {example!r}); nothing was committed: drop or change the table's rule, or the input, "
                                "then run again with --resume")


def _reads(rule: Rule, column: str) -> bool:
    """Whether ``rule``'s condition names ``column`` (as a word; a string that holds the name only costs a read)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(column)}(?![A-Za-z0-9_])", rule.condition) is not None


def _night_table(output: Location, parts: Sequence[str], schema: pa.Schema, columns: list[str], folder: str):
    """The ``columns`` the rules read of the night's parts, as a Delta table in the local ``folder`` for delta-rs's SQL
    (its own object store reads only the table's; our parts lie where ours reads them, S3 or local)."""
    from deltalake import DeltaTable, write_deltalake

    wanted = pa.schema([schema.field(name) for name in columns])
    with storage_errors(output.uri):
        rows = ds.dataset([output.join(part) for part in parts], schema=wanted, format="parquet",
                          filesystem=output.filesystem).to_table(columns=columns)
    write_deltalake(folder, rows)
    return DeltaTable(folder)


def _broken(night, rule: Rule, uri: str) -> tuple[int, str | None]:
    """How many of the night's rows break ``rule``, and the least such id."""
    from deltalake import QueryBuilder
    from deltalake.exceptions import DeltaError

    query = f"SELECT count(*) AS broken, min(id) AS example FROM night WHERE NOT coalesce(({rule.condition}), false)"
    try:
        result = pa.table(QueryBuilder().register("night", night).execute(query).read_all())
    except DeltaError as e:
        raise JobError(f"{uri}: the Delta table's {rule.name} cannot be checked here ({' '.join(str(e).split())[:200]}); "
                       "the job never commits rows it could not check: make the rule one DataFusion's SQL reads, "
                       "or choose another --output") from e
    return int(result.column("broken")[0].as_py()), result.column("example")[0].as_py()
