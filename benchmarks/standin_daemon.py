"""Spark's Python daemon with the stand-in model (``benchmarks.standin_model``) in every worker it forks.

Named by ``spark.python.daemon.module`` (``benchmarks.standin_run``); Spark starts it as
``python -m benchmarks.standin_daemon``. pyspark's daemon must fork before pyarrow or pandas start
threads, so the stand-in is installed in each forked worker, just before the worker's own code runs.
"""

from __future__ import annotations

from pyspark import daemon

_worker = daemon.worker  # the daemon's per-fork entry, looked up by name when it forks


def _worker_with_standin(*args: object) -> object:
    from benchmarks.standin_model import install

    install()
    return _worker(*args)


if __name__ == "__main__":
    daemon.worker = _worker_with_standin
    daemon.manager()
