"""The seam between the job core and a table format: one commit a run, of parts already written.

Engines write parts as they always do (``job.output.parts``); with ``--table-format delta`` or
``iceberg`` the driver then commits them, after the final check and before the manifest, as ONE
new version of the table (``job.finish``): ``Commit.adds`` are the parts this run wrote or adopted,
``Commit.removes`` the parts of replaced and deleted input files. A reader of the table sees last
night's version or tonight's, never a mix. ``parquet`` has no commit: the folder is the table.

A format module (``delta``, ``iceberg``, and ``iceberg_glue`` for an Iceberg table whose catalog
is AWS Glue) answers three questions about the table ``TableAt`` names, each module imported only
when used, so the core install needs none of their libraries:
- ``require_ours``: before any work, refuse a table whose schema is not ours, or that another
  writer committed to since our last run (one line, exit 2).
- ``commit``: apply the ``Commit`` in one transaction, at most once for a given run number, so a
  run that died after its commit and before its manifest is finished by ``--resume`` without a
  second version; returns the table's new version (None: that run had committed it already).
- ``FOLDER``: the folder of its own files under the prefix (``_delta_log``, ``metadata``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import pyarrow as pa

from job.errors import JobError
from storage import Location

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
    """What one run does to the table, in one transaction."""

    adds: Mapping[str, int]  # part name (relative to the prefix) -> its rows
    removes: tuple[str, ...]  # parts the table holds that leave it (replaced or deleted input files)
    schema: pa.Schema  # the parts' schema (job.output.rows.output_schema)
    number: int  # the run's number in this table (1: the first run); a commit is applied once per number
    run_id: str
    time_travel_days: float  # how long removed parts stay readable (recorded in the table's properties)


@dataclass(frozen=True)
class TableState:
    """What the previous run's manifest recorded of the table: to tell another writer's commits from ours."""

    number: int  # that run's number
    version: int | None  # the table's version after its commit


def keeps_versions(table_format: str) -> bool:
    """Whether older versions of the table still name earlier parts: then each version of an input file gets a
    part of its own (``job.output.parts.part_name``), never overwriting bytes an older version reads."""
    return table_format != "parquet"


def format_module(name: str, catalog: str = "embedded") -> ModuleType | None:
    """The module that commits ``name`` through ``catalog`` (None for parquet: the folder is the table)."""
    if name == "parquet":
        return None
    return importlib.import_module(f"job.output.formats.{name}{'_glue' if catalog == 'glue' else ''}")


def require_table(at: TableAt, table_format: str, previous: TableState | None, schema: pa.Schema) -> None:
    """Before any work: the format's table at ``at`` (if any) must be ours (``require_ours``)."""
    module = format_module(table_format, at.catalog)
    if module is not None:
        module.require_ours(at, schema, previous)


def require_installed(table_format: str, catalog: str = "embedded") -> None:
    """Refuse, before any work, a format whose library is not installed: one line naming the install."""
    libraries = LIBRARIES.get("iceberg_glue" if catalog == "glue" else table_format, ())
    missing = [library for library in libraries if importlib.util.find_spec(library) is None]
    if missing:
        raise JobError(f"--table-format {table_format} needs the {missing[0]} package: pip install -e '.[{table_format}]' "
                       f"(or 'streaming-batch-inference[{table_format}]')")
