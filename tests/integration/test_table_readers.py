"""The readers a table's users point at it read every column and every row of a Delta and an Iceberg table the job
wrote with --embeddings (the local engine): deltalake, polars, Daft and Ray Data for Delta; pyiceberg, polars, Daft
and Ray Data for Iceberg. Each reader's rows are held to the format's own library's (deltalake's, pyiceberg's).

DuckDB and Spark are not here: offline, DuckDB cannot download its delta/iceberg extensions and Spark cannot fetch
the Delta or Iceberg jars. Daft is tried when it is installed (its wheels pin pyarrow<26, so it is not in the test
extra).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from runners import local_job
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night

pytestmark = pytest.mark.usefixtures("local_ray")
EMBEDDING_DIM = 2048  # ResNet50's pooled feature
LINEAGE = ("source_file", "run_id", "model", "made_at")


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    """A Delta and an Iceberg table of the same two input files, with the embedding beside the predictions."""
    root = tmp_path_factory.mktemp("readers")
    write_night(f"{root}/in", None, 0, 2)
    for table_format in ("delta", "iceberg"):
        local_job.main([*job_args(f"{root}/in", f"{root}/{table_format}", None, "--table-format", table_format,
                                  "--embeddings", "with"), "--workers", "0"])
    return root


def rows(table: pa.Table) -> list[dict]:
    """The rows in id order, as Python values (a reader's own string, list and float widths aside)."""
    return sorted(table.to_pylist(), key=lambda row: row["id"])


def ray_rows(dataset) -> pa.Table:
    import ray

    return pa.concat_tables([ray.get(ref) for ref in dataset.to_arrow_refs()])


def iceberg_table(out: str):
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(f"file://{out}")


def ray_iceberg(out: str, tmp_path: Path) -> pa.Table:
    """Ray Data's read_iceberg finds tables in a catalog: a SQL catalog that registers the table's latest metadata."""
    import ray
    from pyiceberg.catalog.sql import SqlCatalog

    settings = {"uri": f"sqlite:///{tmp_path}/catalog.db"}
    catalog = SqlCatalog("readers", **settings)
    catalog.create_namespace("db")
    catalog.register_table(("db", "predictions"), iceberg_table(out).metadata_location)
    dataset = ray.data.read_iceberg(table_identifier="db.predictions", catalog_kwargs={"name": "readers", "type": "sql",
                                                                                         **settings})
    return ray_rows(dataset)


def daft():
    return pytest.importorskip("daft", reason="Daft is not installed (pip install daft; its wheels pin pyarrow<26)")


def polars_delta(out: str, _: Path) -> pa.Table:
    import polars

    return polars.read_delta(out).to_arrow()


def polars_iceberg(out: str, _: Path) -> pa.Table:
    import polars

    return polars.scan_iceberg(iceberg_table(out)).collect().to_arrow()


def ray_delta(out: str, _: Path) -> pa.Table:
    import ray

    return ray_rows(ray.data.read_delta(out))


DELTA_READERS: dict[str, Callable[[str, Path], pa.Table]] = {
    "polars.read_delta": polars_delta,
    "daft.read_deltalake": lambda out, _: daft().read_deltalake(out).to_arrow(),
    "ray.data.read_delta": ray_delta,
}
ICEBERG_READERS: dict[str, Callable[[str, Path], pa.Table]] = {
    "polars.scan_iceberg": polars_iceberg,
    "daft.read_iceberg": lambda out, _: daft().read_iceberg(iceberg_table(out)).to_arrow(),
    "ray.data.read_iceberg": ray_iceberg,
}


def own_reader(table_format: str, out: str) -> pa.Table:
    """The format's own library: deltalake for Delta, pyiceberg for Iceberg."""
    if table_format == "delta":
        from deltalake import DeltaTable

        return DeltaTable(out).to_pyarrow_table()
    return iceberg_table(out).scan().to_arrow()


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_the_formats_own_library_reads_every_row_with_its_embedding_and_lineage(tables, table_format):
    table = own_reader(table_format, f"{tables}/{table_format}")
    assert table.num_rows == 6 and table.column_names[-len(LINEAGE):] == list(LINEAGE)
    assert all(len(row["embedding"]) == EMBEDDING_DIM for row in table.to_pylist())
    assert set(table.column("source_file").to_pylist()) == {"part-00000.parquet", "part-00001.parquet"}


@pytest.mark.parametrize("table_format, reader", [*(("delta", name) for name in DELTA_READERS),
                                                  *(("iceberg", name) for name in ICEBERG_READERS)])
def test_every_reader_reads_every_column_and_every_row(tables, table_format, reader, tmp_path):
    out = f"{tables}/{table_format}"
    read = {**DELTA_READERS, **ICEBERG_READERS}[reader]
    expected, got = own_reader(table_format, out), read(out, tmp_path)
    assert got.column_names == expected.column_names
    assert rows(got) == rows(expected)
