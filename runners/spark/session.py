"""The job's SparkSession: the one Spark already runs in this process, else one the job starts.

Use it through ``runners.spark_job``. Three cases, and who owns what:

- A session is active in the calling thread (a notebook, ``spark-submit``, the tests): the
  job uses it and leaves it as it was.
- A SparkContext exists but no session is active in this thread (a Databricks driver can be
  in that state, and so is any thread but the one that made the session): the job uses that
  context's session, and likewise leaves it running and unconfigured. Building a fresh
  ``--master`` session here would only wrap the cluster's context, and stopping it would stop
  the cluster's.
- No Spark yet: the job starts one on ``--master`` (by default ``local[*,4]``), owns it: it
  quiets its log and tunes it, and stops it at the end.
"""

from __future__ import annotations

import os
import sys

from pyspark import SparkContext
from pyspark.sql import SparkSession

from job.errors import JobError

# Local mode with 4 attempts per task, as spark.task.maxFailures on a cluster: a task whose
# Python worker died is retried (plain local[*] allows one attempt).
DEFAULT_MASTER = "local[*,4]"


def existing_context() -> SparkContext | None:
    """The SparkContext this process runs, if any, without starting one.

    pyspark has no public way to ask (``SparkContext.getOrCreate`` starts one); its own
    ``SparkSession.getActiveSession`` reads this attribute.
    """
    return SparkContext._active_spark_context


def get_session(master: str | None) -> tuple[SparkSession, bool]:
    """The session Spark already runs here, else a new one on ``master``; and whether the job owns it."""
    session = SparkSession.getActiveSession()
    if session is None and existing_context() is not None:
        session = SparkSession.builder.getOrCreate()  # the context's default session (made on it if it has none)
    if session is None:
        return _start_session(master or DEFAULT_MASTER), True
    running = session.sparkContext.master
    if master is not None and master != running:
        raise JobError(f"--master {master}: this process already runs Spark on {running}; drop --master to use it")
    return session, False


def _start_session(master: str) -> SparkSession:
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local workers must run this interpreter (its venv has torch), not the first python3 on PATH.
        # pyspark reads PYSPARK_PYTHON (not the spark.pyspark.python conf) when it starts the JVM.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    session = SparkSession.builder.master(master).appName("streaming-batch-inference").getOrCreate()
    # Progress and the summary, not the JVM's INFO wall.
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkSessionFor:
    """``with SparkSessionFor(master):`` the session Spark already runs, else a new one, stopped on exit.

    Entered while the driver plans the input (``job.driver.run_job``): the JVM starts meanwhile.
    """

    def __init__(self, master: str | None) -> None:
        self.master = master
        self.session: SparkSession | None = None
        self.owned = False  # True only for a session this job started: the only one it may tune or stop

    def __enter__(self) -> SparkSessionFor:
        self.session, self.owned = get_session(self.master)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned and self.session is not None:
            self.session.stop()

    def gives_gpus(self) -> bool:
        """Whether Spark gives each task a GPU (read from the session, once it runs)."""
        return self.session.conf.get("spark.task.resource.gpu.amount", None) is not None

    def tune(self, key: str, value: str) -> None:
        """Set a runtime SQL setting on a session the job started; a session someone else made keeps theirs."""
        if self.owned:
            self.session.conf.set(key, value)
