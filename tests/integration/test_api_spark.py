"""``runners.spark.api.classify`` inside a user's Spark pipeline gives the command's rows, on a real local Spark:
Spark's own image sources need no argument, a bad call is one line, and the workers run the driver's Python."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.functions import col

from job.errors import JobError
from runners import spark_job
from runners.spark.api import classify
from tests.common.api_rows import assert_same_rows
from tests.common.contract import read_output
from tests.common.datasets import write_mixed
from tests.common.image_files import write_image_files
from tests.common.spark import local_spark

ROOT = Path(__file__).resolve().parents[2]


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


def test_sparks_image_sources_need_no_argument(spark, tmp_path):
    names = write_image_files(tmp_path / "files")
    files = spark.read.format("binaryFile").load(str(tmp_path / "files"))  # path, modificationTime, length, content
    decoded = spark.read.format("image").load(str(tmp_path / "files"))  # image: origin, height, width, nChannels, mode, data
    by_path = {row.id: row for row in classify(files, weights="random", id_column="path").collect()}
    from_structs = classify(decoded, weights="random").collect()
    assert sorted(path.rsplit("/", 1)[-1] for path in by_path) == names and all(row.error is None for row in by_path.values())
    assert len(from_structs) == len(names) and all(row.error is None for row in from_structs)


def test_a_bad_call_is_one_line_naming_the_argument_before_any_work(spark):
    images = spark.createDataFrame([(b"not an image", "a"), (b"", "b")], "picture binary, name string")
    rows = classify(images, weights="random").collect()  # the one binary column is the image column
    assert len({row.id for row in rows}) == 2 and all(row.error for row in rows)
    with pytest.raises(JobError, match=r"^image_column='photo': the rows have no such column \(they have picture, name\)"):
        classify(images, weights="random", image_column="photo")
    with pytest.raises(JobError, match="^image_column='name' has type string; the job reads image bytes"):
        classify(images, weights="random", image_column="name")
    with pytest.raises(JobError, match="^embeddings= must be one of off, with, only, got 'yes'$"):
        classify(images, weights="random", embeddings="yes")
    with pytest.raises(JobError, match="^prefetch=-1: pass 0"):
        classify(images, weights="random", prefetch=-1)


def test_the_workers_run_the_drivers_python_by_path(tmp_path):
    """A virtualenv's python run by its path, not activated: ``python3`` on PATH is another (here one that fails)."""
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python3").write_text("#!/bin/sh\necho 'not the driver python' >&2\nexit 1\n")
    (shims / "python3").chmod(0o755)
    pq.write_table(pa.table({"image": [b"not an image"]}), tmp_path / "images.parquet")
    # The user's own session, and a source with no Python function of its own (createDataFrame's would run first).
    script = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        from runners.spark.api import classify
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        images = spark.read.parquet({str(tmp_path / "images.parquet")!r})
        print([row.error for row in classify(images, weights="random").collect()])
        spark.stop()
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not a recognised image format" in done.stdout


def test_several_models_in_one_call_give_a_dataframe_a_model_with_its_own_rows(spark, tmp_path):
    from tests.common.api_rows import TWO_MODELS, assert_each_models_rows

    write_mixed(str(tmp_path / "in"))
    images = spark.read.parquet(str(tmp_path / "in"))
    several = classify(images, models=TWO_MODELS, batch_size=8)
    rows = [[row.asDict(recursive=True) for row in frame.collect()] for frame in several]
    several[0].persisted.unpersist()
    alone = [[row.asDict(recursive=True) for row in classify(images, **entry, batch_size=8).collect()] for entry in TWO_MODELS]
    assert_each_models_rows(rows, alone)
