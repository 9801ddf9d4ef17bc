"""The Spark job end to end on a local Spark, real Parquet, real images and a real S3 server."""

from __future__ import annotations

import numpy as np
import pytest

from runners import spark_job
from job.cli import run_main
from job.sample.synthetic import synthetic_rows, write_dataset
from storage import resolve
from job import progress
from tests.common.contract import assert_output_contract, assert_progress_shown, assert_timeline, read_output
from tests.common.datasets import write_mixed
from runners.spark.udfs import TaskSpec
from tests.common.spark import FailFirstAttemptOfPartition1, local_spark


@pytest.fixture(scope="module", autouse=True)
def spark():
    """One Spark for the module; two attempts per task, so a failed task is retried once."""
    with local_spark(task_attempts=2, records_per_batch=8) as session:
        yield session


def run(*argv: str) -> dict:
    return spark_job.main(["--weights", "random", "--batch-size", "8", *argv])


def by_id(uri: str, endpoint: str | None = None) -> dict[str, dict]:
    rows, _ = read_output(uri, endpoint)
    return {r["id"]: r for r in rows}


def assert_same_predictions(got: dict[str, dict], expected: dict[str, dict]) -> None:
    assert got.keys() == expected.keys()
    for key, row in expected.items():
        assert got[key]["error"] == row["error"] and got[key]["topk_labels"] == row["topk_labels"], key
        if row["topk_scores"] is not None:
            np.testing.assert_allclose(got[key]["topk_scores"], row["topk_scores"], atol=1e-4)
        if row.get("embedding") is not None:  # the job's dtype from every path
            np.testing.assert_allclose(np.float32(got[key]["embedding"]), np.float32(row["embedding"]), rtol=1e-2, atol=1e-3)


def test_s3_in_s3_out_meets_the_output_contract(s3_bucket, s3_env, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.2)  # the display's log lines, at test speed
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    manifest = run("--input", f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env)
    rows, written = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert written == manifest and manifest["engine"] == "spark"
    assert_output_contract(rows, manifest, ids, bad)
    assert "pyspark" in manifest["versions"] and manifest["settings"]["spark"]["udf"] == "iterator"
    assert_progress_shown(capsys.readouterr().err, "spark", len(ids))  # from the tasks' accumulator


def test_one_input_file_gets_a_timeline_from_its_model_batches_not_its_one_part(tmp_path):
    """With one part committed at the end, start-up once measured the whole run and there was no steady rate."""
    write_dataset(resolve(str(tmp_path / "in")), synthetic_rows(20, "jpeg", (64, 48), seed=1), rows_per_file=20)
    manifest = run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--batch-size", "2")
    assert len(manifest["files"]) == 1 and manifest["timeline"]["events"] == 10  # 20 rows, batches of 2
    assert_timeline(manifest, steady_at_least_whole=True)


def test_series_udf_and_prefetch_give_the_iterator_predictions(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    common = ["--input", str(tmp_path / "in"), "--limit", "14", "--embeddings"]  # the series UDF declares the embedding too
    run(*common, "--output", str(tmp_path / "iterator"), "--prefetch", "0")
    run(*common, "--output", str(tmp_path / "series"), "--udf", "series", "--partitions", "2")
    run(*common, "--output", str(tmp_path / "prefetch"), "--prefetch", "2", "--partitions", "1")
    expected = by_id(str(tmp_path / "iterator"))
    assert len(expected) == 14
    assert_same_predictions(by_id(str(tmp_path / "series")), expected)
    assert_same_predictions(by_id(str(tmp_path / "prefetch")), expected)


def test_spark_reads_an_output_with_default_embeddings(spark, tmp_path):
    """Spark 3.5/4 refuse Parquet's FLOAT16 ("Illegal Parquet type"): the default embedding is float32, which they read."""
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--limit", "6", "--embeddings")
    rows = {row["id"]: row for row in spark.read.parquet(str(tmp_path / "out")).collect()}
    expected = by_id(str(tmp_path / "out"))
    assert rows.keys() == expected.keys() and len(rows) == 6
    for key, row in expected.items():
        assert (rows[key]["embedding"] is None) == (row["embedding"] is None), key
        if row["embedding"] is not None:
            assert len(rows[key]["embedding"]) == 2048 and rows[key]["embedding"] == row["embedding"], key


def test_a_retried_task_does_not_duplicate_rows(tmp_path, monkeypatch):
    """Partition 1's first attempt writes its file, then dies; the retry replaces that file."""
    ids, bad = write_mixed(str(tmp_path / "in"))
    monkeypatch.setattr(spark_job, "ReadAndClassify", FailFirstAttemptOfPartition1)
    manifest = run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    assert manifest["settings"]["spark"]["retried_partitions"] == [1]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--udf", "nonsense"], "argument --udf: invalid choice: 'nonsense'"),
        (["--prefetch", "-1"], "argument --prefetch: must be an integer >= 0, got -1"),
        (["--partitions", "0"], "argument --partitions: must be an integer >= 1, got 0"),
    ],
)
def test_bad_options_stop_in_one_line(argv, words, capsys):
    with pytest.raises(SystemExit) as stopped:
        run_main(spark_job.main, argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and words in err and err.count("\n") == 1, err


def test_tasks_default_to_a_few_per_core_never_more_than_the_files():
    assert spark_job.default_partitions(files=80, cores=2) == 3 * 2  # one task a file spent 20 of 50 CPU s on tasks
    assert spark_job.default_partitions(files=4, cores=2) == 4  # a file is the unit of work: no task without one
    assert spark_job.default_partitions(files=0, cores=2) == 1 and spark_job.default_partitions(files=9, cores=0) == 3


def test_an_unfinished_stage_keeps_its_files_broadcast_valid_a_finished_one_frees_it(spark):
    """Ctrl-C leaves the stage in Spark's scheduler, which may still ship the files' broadcast to new tasks: the
    release after it only unpersists (a destroyed one is Spark's INTERNAL_ERROR_BROADCAST, logged as an ERROR)."""
    context = spark.sparkContext
    spec = TaskSpec(job=None, files=context.broadcast(("a.parquet", "b.parquet")), prefetch=0)
    files = spec.files

    spec.release(finished=False)
    assert context.parallelize([0, 1], 2).map(lambda i: files.value[i]).collect() == ["a.parquet", "b.parquet"]
    spec.release()
    with pytest.raises(Exception, match="after it was destroyed"):
        context.parallelize([0], 1).map(lambda i: files.value[i]).collect()
