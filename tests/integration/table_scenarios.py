"""Delta Lake and Iceberg outputs (--table-format): scenarios the local, Ray and Spark tests run the same way.

Each table is read back by the readers its users have offline (deltalake, polars, pyiceberg)
and held to the plain Parquet folder of the same input: the same rows, ids and predictions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import job_args

Main = Callable[[Sequence[str] | None], dict]
PREDICTIONS = ("id", "label", "topk_labels", "error")


def delta_options(endpoint: str | None) -> dict | None:
    """delta-rs's storage options for the moto server (credentials come from the environment)."""
    return None if endpoint is None else {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}


def read_delta(out: str, endpoint: str | None, version: int | None = None) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(out, storage_options=delta_options(endpoint), version=version).to_pyarrow_table()


def predictions(table: pa.Table | list[dict]) -> dict[str, tuple]:
    rows = table.to_pylist() if isinstance(table, pa.Table) else table
    return {r["id"]: tuple(r[c] for c in PREDICTIONS[1:]) for r in rows}


def read_iceberg(out: str, endpoint: str | None) -> pa.Table:
    from job.night.formats.iceberg import static_table

    return static_table(resolve(out, endpoint), endpoint).scan().to_arrow()


def table_equals_the_parquet_folder(main: Main, root: str, endpoint: str | None, table_format: str,
                                    *engine_args: str, parquet: dict[str, tuple] | None = None) -> dict:
    """A first run writes a ``table_format`` table whose rows are the plain folder's (run here unless ``parquet`` is
    given: its predictions by id). Returns the table run's manifest."""
    source, out = f"{root}/in", f"{root}/{table_format}"
    if parquet is None:
        main([*job_args(source, f"{root}/parquet", endpoint), *engine_args])
        parquet = predictions(read_output(f"{root}/parquet", endpoint)[0])
    manifest = main([*job_args(source, out, endpoint, "--table-format", table_format), *engine_args])
    table = read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == manifest["counts"]["rows_in"] == len(parquet)
    assert predictions(table) == parquet
    return manifest



def delta_and_iceberg_hold_the_parquet_folders_rows(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """One plain folder, one Delta and one Iceberg table of the same input: the same rows in all three."""
    table_equals_the_parquet_folder(main, root, endpoint, "delta", *engine_args)
    parquet = predictions(read_output(f"{root}/parquet", endpoint)[0])
    table_equals_the_parquet_folder(main, root, endpoint, "iceberg", *engine_args, parquet=parquet)
