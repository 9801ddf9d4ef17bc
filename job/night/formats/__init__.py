"""The seam between the job core and a table format: the format's log is the table's one truth.

Engines write parts as they always do (``job.output.parts``); with ``--table-format delta`` or
``iceberg`` the driver then commits them, after the final check and before the manifest, as ONE
new version of the table (``job.night.finish``). The table is shared: Databricks' OPTIMIZE and VACUUM,
a DELETE for a privacy request, another job's append all commit to it, so a ``Commit`` says what
the run changes by the rows' lineage, not by file names: ``Commit.adds`` are the parts this run
wrote or adopted, ``Commit.leaving`` the rows (by their ``source_file``: input files, image objects'
keys) that leave the table (replaced or gone), wherever compaction moved them; ``Commit.overwrite`` takes every row
of the current version out (``--overwrite``: one new version, never a table readers cannot open).
The format applies it on the table's latest version with its own optimistic concurrency: a
commit another writer made meanwhile is rebased over unless it touched the same files.
``parquet`` has no commit: the folder is the table.

A format module (``delta``, ``iceberg``, and ``iceberg_glue`` for an Iceberg table whose catalog
is AWS Glue) answers these questions about the table ``TableAt`` names, each module imported only
when used, so the core install needs none of their libraries:
- ``require_ours``: before any work, refuse a table whose schema is not ours, or a table our last
  run recorded that is gone or unreadable now (one line, exit 2; never rebuilt from our manifest).
- ``commit``: apply the ``Commit`` in one transaction, numbered after the log's last run of ours and marked with
  the night's run id, so no night takes another's number, and a commit this very run made (a retry after an answer
  lost) is never made twice; returns what it did (``Applied``). A commit with nothing to add or take out makes no
  version.
- ``require_writable``: before any work, refuse a night the table's own rules forbid (an append-only Delta
  table that the night must take rows out of, a writer feature the job's commit cannot honour).
- ``data_files``: the data files of its latest version, with their ``source_file`` bounds, and that version
  (``table_files``): a commit tells by it whether anyone committed since the night planned.
- ``FOLDER``: the folder of its own files under the prefix (``_delta_log``, ``metadata``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

import pyarrow as pa

from job.errors import JobError
from job.night.formats.by_source import DataFile, Leaving
from job.night.formats.withheld import Watched, Withheld
from storage import Location, StorageError

if TYPE_CHECKING:
    from job.config import JobConfig

FOLDERS = {"delta": "_delta_log", "iceberg": "metadata"}  # each format's own files under the output prefix
# Each format's libraries (the in-memory catalog needs SQLAlchemy, pyiceberg's Glue catalog boto3): the pip extra of
# the format's name installs them.
LIBRARIES = {"delta": ("deltalake",), "iceberg": ("pyiceberg", "sqlalchemy"), "iceberg_glue": ("pyiceberg", "boto3")}
APP_ID = "streaming-batch-inference"  # the writer's id in the table's log: its transactions are numbered by run


@dataclass(frozen=True)
class TableAt:
    """Where a run's table is: its prefix, and the catalog that names its current version."""

    output: Location  # the prefix: the parts, and the format's own files (FOLDERS)
    endpoint_url: str | None  # --s3-endpoint-url (None: AWS_ENDPOINT_URL, else AWS)
    catalog: str = "embedded"  # iceberg: embedded (the prefix's metadata/ alone) | glue (AWS Glue names the version)
    name: str | None = None  # glue: the table's DATABASE.TABLE

    @classmethod
    def of(cls, output: Location, config: JobConfig) -> TableAt:
        """The table ``config`` (a ``JobConfig``) writes at ``output``."""
        return cls(output, config.s3_endpoint_url, config.iceberg_catalog, config.iceberg_table)


@dataclass(frozen=True)
class Commit:
    """What one run does to the table, in one transaction on its latest version."""

    # Part name (relative to the prefix) -> its rows: the parts this run wrote, or adopted from a night that never
    # committed them. Added unless the log lists one already (a retried commit of this run's own).
    adds: Mapping[str, int]
    # The rows that leave the table, by their source_file: replaced or gone input files, and object groups' keys. A data
    # file holding only such rows is removed; one compaction made of theirs and others' is rewritten without them.
    leaving: Leaving
    schema: pa.Schema  # the parts' schema (job.output.rows.table_schema)
    number: int  # the run's number as its manifest would have it; the commit numbers it after the log's last run
    run_id: str  # the night's identity in the log: a commit of this run is found by it, and never made twice
    time_travel_days: float  # how long removed parts stay readable (recorded in the table's properties)
    overwrite: bool = False  # --overwrite: every row of the current version leaves, whoever wrote it
    # Our parts the table may still hold, each with its one input unit (file or object group): known without reading
    # them. Any other data file (another writer's, a compaction's) is judged by the log's statistics, and read only when
    # they cannot tell.
    known: Mapping[str, str] = field(default_factory=dict)
    # The parts this run adds -> (min, max) of their source_file: an input file's name twice, a group's first and last
    # object key. The log's statistics, for the next night's pruning and the platform's data skipping.
    bounds: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    keep: frozenset[str] = frozenset()  # every part of the table after the night: never taken out by this commit
    # Parts this run adds whose input unit the table held rows of at the plan: their rows another writer deleted are
    # withheld (job.night.formats.withheld), on the version the commit applies to.
    watched: Mapping[str, Watched] = field(default_factory=dict)
    planned_version: int | None = None  # the table's version when the night planned (None: no table then)


@dataclass(frozen=True)
class Applied:
    """What a format's commit did."""

    version: int  # the table's version after the commit (or the version this run committed before)
    removed: tuple[str, ...] = ()  # data files (relative to the prefix) this commit took out of the table
    again: bool = False  # this run (its run id) had committed already: nothing was committed now
    number: int | None = None  # the run number the commit recorded: after the log's last run of ours
    withheld: Mapping[str, Withheld] = field(default_factory=dict)  # parts committed without some rows, and as what
    live: frozenset[str] = frozenset()  # the table's data files after the commit: a retired part among them is live


@dataclass(frozen=True)
class TableFiles:
    """A version of the table as its log lists it."""

    files: list[DataFile] = field(default_factory=list)  # its data files, with their source_file bounds
    version: int | None = None  # which version: Delta's number, Iceberg's snapshot id (None: no table, or no snapshot)


@dataclass(frozen=True)
class TableState:
    """What the previous run's manifest recorded of the table: a table it names must still be there and readable."""

    number: int  # that run's number
    version: int | None  # the table's version after its commit


def gone_before_commit(uri: str, count: int, example: str) -> StorageError:
    """The line for parts this night wrote that are gone before its commit: on a shared table, another writer's VACUUM
    that deletes every file no version names yet."""
    return StorageError(f"{uri}: {count} parts this night wrote are gone before its commit (e.g. {example}): another "
                        "writer's VACUUM with a retention shorter than a night (RETAIN 0 HOURS, or FULL) deletes the "
                        "files no version names yet; nothing of this night was committed: keep VACUUM's retention "
                        "longer than a night, then run again with --resume, which writes them again")


def format_module(name: str, catalog: str = "embedded") -> ModuleType | None:
    """The module that commits ``name`` through ``catalog`` (None for parquet: the folder is the table)."""
    if name == "parquet":
        return None
    return importlib.import_module(f"job.night.formats.{name}{'_glue' if catalog == 'glue' else ''}")


def require_table(at: TableAt, table_format: str, previous: TableState | None, schema: pa.Schema) -> None:
    """Before any work: the format's table at ``at`` (if any) must be ours (``require_ours``)."""
    module = format_module(table_format, at.catalog)
    if module is not None:
        module.require_ours(at, schema, previous)


def require_writable(at: TableAt, table_format: str, removes: bool, leaving: Leaving, known: Mapping[str, str]) -> None:
    """Before any work: refuse (one line) a night the table's own rules forbid, or that its writer features ask more of
    than the job's commit can honour (``require_writable`` of the format). ``removes``: the night takes rows out (of
    input files replaced or gone, or every row: --overwrite); ``leaving`` and ``known`` as a ``Commit`` has them."""
    module = format_module(table_format, at.catalog)
    if module is not None:
        module.require_writable(at, removes, leaving, known)


def table_files(at: TableAt, table_format: str) -> TableFiles:
    """The data files of the format's table at ``at`` (its latest version), with their source_file bounds, and which
    version that is; a plain folder has no log to list: none."""
    module = format_module(table_format, at.catalog)
    return TableFiles() if module is None else module.data_files(at)


def require_installed(table_format: str, catalog: str = "embedded") -> None:
    """Refuse, before any work, a format whose library is not installed: one line naming the install."""
    libraries = LIBRARIES.get("iceberg_glue" if catalog == "glue" else table_format, ())
    missing = [library for library in libraries if importlib.util.find_spec(library) is None]
    if missing:
        raise JobError(f"--table-format {table_format} needs the {missing[0]} package: pip install -e '.[{table_format}]' "
                       f"(or 'streaming-batch-inference[{table_format}]')")
