"""The job's SparkSession: the one Spark already runs in this process, else one the job starts.

Use it through ``runners.spark_job``. Three cases, and who owns what:

- A session is active in the calling thread (a notebook, a script that made one, the tests): the
  job uses it and leaves it as it was.
- A SparkContext exists but no session is active in this thread (a Databricks driver can be
  in that state, and so is any thread but the one that made the session): the job uses that
  context's session, and likewise leaves it running and unconfigured. Building a fresh
  ``--master`` session here would only wrap the cluster's context, and stopping it would stop
  the cluster's.
- No Spark yet: the job starts one on ``--master`` (else, under ``spark-submit``, the master
  it was given; else ``local[*,4]``) and owns it: it quiets its log, tunes it, and stops it
  at the end.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from pyspark import SparkContext
from pyspark.sql import SparkSession

from job.errors import JobError, interrupt_once
from job.execution import Devices
from runners.spark.udfs import device_name

# Local mode with 4 attempts per task, as spark.task.maxFailures on a cluster: a task whose
# Python worker died is retried (plain local[*] allows one attempt).
DEFAULT_MASTER = "local[*,4]"
# Errors only from the JVM's start (its lines before setLogLevel can run): for a JVM the job launches, without --verbose.
QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")


def existing_context() -> SparkContext | None:
    """The SparkContext this process runs, if any, without starting one.

    pyspark has no public way to ask (``SparkContext.getOrCreate`` starts one); its own
    ``SparkSession.getActiveSession`` reads this attribute.
    """
    return SparkContext._active_spark_context


def get_session(master: str | None, verbose: bool = False) -> tuple[SparkSession, bool]:
    """The session Spark already runs here, else a new one on ``master`` (``verbose``: its WARN lines
    shown); and whether the job owns it."""
    session = SparkSession.getActiveSession()
    if session is None and existing_context() is not None:
        session = SparkSession.builder.getOrCreate()  # the context's default session (made on it if it has none)
    if session is None:
        return _start_session(master, verbose), True
    running = session.sparkContext.master
    if master is not None and master != running:
        raise JobError(f"--master {master}: this process already runs Spark on {running}; drop --master to use it")
    workers_use_this_python(session)
    return session, False


def _start_session(master: str | None, verbose: bool) -> SparkSession:
    builder = SparkSession.builder.appName("streaming-batch-inference")
    if master is not None or not launched_by_spark_submit():
        # Without spark-submit, pyspark's own default would be local[*], which never retries a task.
        master = master or DEFAULT_MASTER
        builder = builder.master(master)
        if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
            # Local workers must run this interpreter (its venv has torch), not the first python3 on PATH.
            # pyspark reads PYSPARK_PYTHON (not the spark.pyspark.python conf) when it starts the context.
            os.environ["PYSPARK_PYTHON"] = sys.executable
    if not verbose:  # the job's progress line, not Spark's console progress bar; Spark's start-up lines kept out
        builder = builder.config("spark.ui.showConsoleProgress", "false")
        if not launched_by_spark_submit():  # the JVM starts here: its log quiet from its start
            builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}")
    session = builder.getOrCreate()
    # The job's progress display and summary, not the JVM's log; --verbose keeps Spark's warnings.
    session.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
    return session


class QuietInterrupt:
    """While a session the job started runs: Ctrl-C ends the job with its one line, not py4j's tracebacks.

    pyspark's SIGINT handler cancels the jobs through py4j from inside the signal handler, a call
    re-entering the one the main thread is in, and py4j logs each failure with a traceback on the root
    logger. Here Ctrl-C only raises ``KeyboardInterrupt``, once (``job.errors.interrupt_once``: stopping the session
    cancels the jobs), and
    py4j's own log records are dropped; ``--verbose`` keeps both as pyspark has them.
    """

    def __enter__(self) -> QuietInterrupt:
        self.main_thread = threading.current_thread() is threading.main_thread()
        if self.main_thread:
            self.previous = signal.signal(signal.SIGINT, interrupt_once)
        logging.getLogger().addFilter(_not_py4j)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeFilter(_not_py4j)
        if self.main_thread:
            signal.signal(signal.SIGINT, self.previous)


def _not_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def workers_use_this_python(spark: SparkSession) -> None:
    """On a local master, Python functions made from now on run in this interpreter, unless ``PYSPARK_PYTHON`` names one.

    pyspark gives its Python workers ``PYSPARK_PYTHON`` as it was when the context started, else
    ``python3`` from PATH: a virtualenv's python run by its path (not activated) then starts workers
    without this project's packages. Each function takes the context's ``pythonExec`` when it is made
    (``pyspark.sql.udf._wrap_function``), so setting it reaches a session someone else started. On a
    cluster the executors' Python is the cluster's (Databricks sets ``PYSPARK_PYTHON``): left as it is.
    """
    context = spark.sparkContext
    if "PYSPARK_PYTHON" in os.environ or not context.master.startswith("local"):
        return
    context.pythonExec = sys.executable


def launched_by_spark_submit() -> bool:
    """Whether spark-submit started this Python, having chosen the master (its ``--master``,
    ``spark-defaults.conf``, else ``local[*]``) and the workers' Python: the job keeps both.

    spark-submit hands its JVM's address over in ``PYSPARK_GATEWAY_PORT``, which is how
    pyspark itself tells (``pyspark.java_gateway.launch_gateway``).
    """
    return "PYSPARK_GATEWAY_PORT" in os.environ


class SparkSessionFor:
    """``with SparkSessionFor(master):`` the session Spark already runs, else a new one, stopped on exit.

    Entered while the driver plans the input (``job.driver.run_job``): the JVM starts meanwhile.
    """

    def __init__(self, master: str | None, verbose: bool = False) -> None:
        self.master = master
        self.verbose = verbose
        self.session: SparkSession | None = None
        self.owned = False  # True only for a session this job started: the only one it may tune or stop
        self.quiet_interrupt: QuietInterrupt | None = None

    def __enter__(self) -> SparkSessionFor:
        quiet = None if self.verbose else QuietInterrupt().__enter__()  # Ctrl-C while the JVM starts, too
        try:
            self.session, self.owned = get_session(self.master, self.verbose)
        except BaseException as e:
            if quiet is not None:
                quiet.__exit__(type(e), e, e.__traceback__)
            raise
        if quiet is not None and not self.owned:  # a session someone else made keeps pyspark's handling
            quiet.__exit__(None, None, None)
            quiet = None
        self.quiet_interrupt = quiet
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned and self.session is not None:
            if isinstance(exc[1], KeyboardInterrupt):
                self.interrupted()
            self.session.stop()
        if self.quiet_interrupt is not None:
            self.quiet_interrupt.__exit__(*exc)

    def interrupted(self) -> None:
        """Ctrl-C: the JVM's log off from now (its executors' lines about the Python workers Ctrl-C ended, its
        scheduler's about the stage it was still submitting), on a session this job started, unless --verbose.
        Called as soon as the run sees the interrupt, and again on exit."""
        if self.owned and self.session is not None and not self.verbose:
            self.session.sparkContext.setLogLevel("OFF")

    def devices(self) -> Devices:
        """What each task's model runs on (``session_devices``)."""
        return session_devices(self.session)

    def tune(self, key: str, value: str) -> None:
        """Set a runtime SQL setting on a session the job started; a session someone else made keeps theirs."""
        if self.owned:
            self.session.conf.set(key, value)


def gives_gpus(spark: SparkSession) -> bool:
    """Whether Spark gives each task a GPU."""
    return spark.conf.get("spark.task.resource.gpu.amount", None) is not None


def session_devices(spark: SparkSession) -> Devices:
    """A GPU per task when Spark gives tasks GPUs (its type read by one probe task), else the CPU."""
    if not gives_gpus(spark):
        print("no spark.task.resource.gpu.amount set: each Python worker runs the model on CPU", file=sys.stderr)
        return Devices("cpu")
    name = spark.sparkContext.parallelize([0], 1).map(lambda _: device_name()).first()
    if name is None:
        raise JobError("Spark gives each task a GPU (spark.task.resource.gpu.amount), but CUDA is not usable on the "
                       "executors: install a torch built for their CUDA driver")
    return Devices("cuda", name)
