"""The seam between the job core and a table format: one commit a run, of parts already written.

Engines write parts as they always do (``job.output.parts``); with ``--table-format delta`` or
``iceberg`` the driver then commits them, after the final check and before the manifest, as ONE
new version of the table (``job.finish``): ``Commit.adds`` are the parts this run wrote or adopted,
``Commit.removes`` the parts of replaced and deleted input files. A reader of the table sees last
night's version or tonight's, never a mix. ``parquet`` has no commit: the folder is the table.

A format module (``delta``, ``iceberg``) answers three questions, each imported only when used,
so the core install needs neither library:
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

import pyarrow as pa

from job.errors import JobError
from storage import Location

FOLDERS = {"delta": "_delta_log", "iceberg": "metadata"}  # each format's own files under the output prefix
# Each format's libraries (the in-memory catalog needs SQLAlchemy): the pip extra of the format's name installs them.
LIBRARIES = {"delta": ("deltalake",), "iceberg": ("pyiceberg", "sqlalchemy")}
APP_ID = "streaming-batch-inference"  # the writer's id in the table's log: its transactions are numbered by run


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


def format_module(name: str) -> ModuleType | None:
    """The module that commits ``name`` (None for parquet: the folder is the table)."""
    return None if name == "parquet" else importlib.import_module(f"job.output.formats.{name}")


def require_format(uri: str, asked: str, held_files: tuple[str, ...], recorded: str | None) -> None:
    """Refuse (one line) an output that holds another table format than ``asked``: by its folders, or its manifest's record."""
    found = next((name for name, folder in FOLDERS.items() if any(f.startswith(folder + "/") for f in held_files)), None)
    found = found or recorded
    if found is not None and found != asked:
        raise JobError(f"{uri} holds a {found} table and --table-format is {asked}; pass --table-format {found}, or "
                       "--overwrite to replace it, or choose another --output")


def require_table(output: Location, table_format: str, endpoint_url: str | None, previous: TableState | None,
                  schema: pa.Schema) -> None:
    """Before any work: the format's table under ``output`` (if any) must be ours (``require_ours``)."""
    module = format_module(table_format)
    if module is not None:
        module.require_ours(output, endpoint_url, schema, previous)


def require_installed(table_format: str) -> None:
    """Refuse, before any work, a format whose library is not installed: one line naming the install."""
    missing = [library for library in LIBRARIES.get(table_format, ()) if importlib.util.find_spec(library) is None]
    if missing:
        raise JobError(f"--table-format {table_format} needs the {missing[0]} package: pip install -e '.[{table_format}]' "
                       f"(or 'streaming-batch-inference[{table_format}]')")
