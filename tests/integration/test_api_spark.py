"""``runners.spark.api.classify`` inside a user's Spark pipeline gives the command's rows, on a real local Spark."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from pyspark.sql.functions import col

from job.errors import JobError
from runners import spark_job
from runners.spark.api import classify
from tests.common.api_rows import assert_same_rows
from tests.common.contract import read_output
from tests.common.datasets import write_mixed
from tests.common.spark import local_spark


@pytest.fixture(scope="module")
def spark():
    """One Spark for the module, Arrow batches of 5 rows: a model batch (8) spans Spark's batches."""
    with local_spark(records_per_batch=5) as session:
        yield session


def test_a_users_pipeline_gives_the_commands_rows(spark, tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    spark_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "command"), "--weights", "random",
                    "--batch-size", "8", "--embeddings", "with"])
    command_rows, _ = read_output(str(tmp_path / "command"))
    # The user's pipeline: read, filter, our step, write.
    images = spark.read.parquet(str(tmp_path / "in")).where(col("id") != ids[0])
    classify(images, weights="random", batch_size=8, embeddings="with").write.parquet(str(tmp_path / "user"))
    user_rows = pq.read_table(str(tmp_path / "user")).to_pylist()
    assert_same_rows(user_rows, [row for row in command_rows if row["id"] != ids[0]])
    assert {row["id"] for row in user_rows if row["error"]} == set(bad)  # bad images are rows, not failed tasks


def test_rows_without_ids_get_unique_ids_and_bad_options_are_one_line_before_any_work(spark):
    images = spark.createDataFrame([(b"not an image",), (b"",)], "picture binary")
    rows = classify(images, weights="random", image_column="picture").collect()
    assert len({row.id for row in rows}) == 2 and all(row.error for row in rows)
    with pytest.raises(JobError, match="^image_column='image': the rows have no such column"):
        classify(images, weights="random")
    with pytest.raises(JobError, match="^--embeddings must be one of"):
        classify(images, weights="random", image_column="picture", embeddings="yes")
