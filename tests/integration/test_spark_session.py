"""The job and a Spark it did not start: it runs on it, and leaves it running and as it was.

A Databricks driver can run the job where a SparkContext exists but no session is active in
the calling thread; a Python thread other than the one that made the session is in that
state too, which is how these tests reach it with a real local Spark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from job.errors import JobError
from runners import spark_job
from runners.spark.session import get_session
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from tests.common.spark import local_spark

ROOT = Path(__file__).resolve().parents[2]
USERS_LOG_LEVEL = "WARN"  # not the ERROR a job-started session gets
USERS_RECORDS_PER_BATCH = "5"  # not the job's --batch-size
RECORDS_PER_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


@pytest.fixture(scope="module")
def spark():
    """The user's Spark, made in this (the main) thread with the user's own log level and settings."""
    with local_spark(records_per_batch=int(USERS_RECORDS_PER_BATCH)) as session:
        session.sparkContext.setLogLevel(USERS_LOG_LEVEL)
        yield session


def root_log_level(spark: SparkSession) -> str:
    """The JVM's root log level, which ``SparkContext.setLogLevel`` sets (log4j 2 in Spark 3.3+)."""
    return spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel().toString()


def in_a_thread_without_a_session(call: Callable[[], object]) -> object:
    """``call()`` in a new thread, where Spark runs but no session is active; its result or its exception."""
    outcome: dict[str, object] = {}

    def target() -> None:
        outcome["active"] = SparkSession.getActiveSession()
        try:
            outcome["result"] = call()
        except Exception as e:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    assert outcome["active"] is None, "the test's precondition: no session active in the job's thread"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def test_the_job_runs_on_the_running_spark_and_leaves_it_as_it_was(spark, tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    argv = ["--weights", "random", "--batch-size", "8", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")]
    manifest = in_a_thread_without_a_session(lambda: spark_job.main(argv))
    rows, _ = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    assert manifest["settings"]["spark"]["master"] == spark.sparkContext.master == "local[2,1]"
    # Still running, with the user's log level and settings: the job neither stopped nor tuned it.
    assert spark.sparkContext.parallelize(range(3)).count() == 3
    assert root_log_level(spark) == USERS_LOG_LEVEL
    assert spark.conf.get(RECORDS_PER_BATCH) == USERS_RECORDS_PER_BATCH


def test_another_master_than_the_running_one_is_refused(spark):
    with pytest.raises(JobError, match=r"--master spark://elsewhere:7077: this process already runs Spark on local\[2,1\]"):
        in_a_thread_without_a_session(lambda: get_session("spark://elsewhere:7077"))
    assert spark.sparkContext.parallelize(range(3)).count() == 3


def test_the_running_spark_is_used_without_being_owned(spark):
    session, owned = in_a_thread_without_a_session(lambda: get_session(None))
    assert session.sparkContext is spark.sparkContext and not owned


def test_spark_submit_runs_the_documented_entry_on_its_own_master(tmp_path):
    """docs/SPARK.md's spark-submit command; the job keeps the master spark-submit was given."""
    spark_submit = Path(sys.executable).parent / "spark-submit"  # pyspark's, beside this interpreter
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "out"
    done = subprocess.run([str(spark_submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           str(ROOT / "deploy" / "databricks" / "spark_entry.py"),
                           "--weights", "random", "--limit", "4", "--output", str(out)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "_SUCCESS.json").read_text())
    assert manifest["counts"]["rows_in"] == 4 and manifest["settings"]["spark"]["master"] == "local[1]"
