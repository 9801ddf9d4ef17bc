"""Databricks task after the night: registers the job's Delta table in Unity Catalog, once.

``CREATE TABLE IF NOT EXISTS <catalog.schema.table> USING DELTA LOCATION '<output prefix>'``: the
first night creates the external table over the prefix the job commits to; every later night finds
it and does nothing, since each night's commit is already in the table's own log (no ``REFRESH``).
The prefix must lie in a Unity Catalog external location the job's identity may use.
Arguments: the table's three-part name and the output prefix.
"""

import re
import sys

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){2}$")  # catalog.schema.table, no quoting needed
LOCATION = re.compile(r"^s3://[a-z0-9][a-z0-9.-]+/[^']*$")


def statement(name: str, location: str) -> str:
    """The SQL this task runs; refuses (one line) a name or a location that is not plainly one."""
    if not NAME.match(name):
        raise SystemExit(f"error: table name {name!r}: write it as catalog.schema.table")
    if not LOCATION.match(location):
        raise SystemExit(f"error: location {location!r}: write it as s3://bucket/prefix/")
    return f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION '{location}'"


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    SparkSession.builder.getOrCreate().sql(statement(sys.argv[1], sys.argv[2]))
