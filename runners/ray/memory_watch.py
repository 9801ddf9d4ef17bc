"""``MemoryWatch``: ends a run whose workers Ray's memory monitor keeps killing, instead of waiting for ever.

The pools' actors have a bounded restart budget (``runners.ray.stages.ACTOR_RESTARTS``), but Ray Data
restarts its own helper actors (its actor location tracker, its autoscaling coordinator) without limit,
and its executor waits on them: on a node whose memory monitor kills whatever starts, the run would
never end. The watch reads the cluster's worker table (the GCS keeps each dead worker's exit type and
Ray's words for it) every ``POLL_S`` seconds; once more of this job's workers were killed for memory
than the budget, it raises ``WorkersKilledForMemory`` in the thread running the pipeline, which
``runners.ray.cluster.RaySession.unwrap_errors`` answers with its one line. Through Ray Client
(``ray://``) the driver cannot read the GCS's tables: there it watches nothing.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import ray
from ray.util.client import ray as ray_client  # whether this driver is a Ray Client (ray://)
from ray._private.state import state  # the GCS's tables; the public state API needs the dashboard
from ray.core.generated import common_pb2, gcs_pb2

# How Ray says its memory monitor killed a worker: the error type it raises, and the words of its messages
# ("Task was killed due to the node running low on memory", an actor's death "NODE_OUT_OF_MEMORY").
_MEMORY_WORDS = ("running low on memory", "NODE_OUT_OF_MEMORY", "ray.exceptions.OutOfMemoryError")
POLL_S = 1.0  # the worker table is one GCS call; a second is nothing beside a worker's restart


def killed_for_memory(error: BaseException) -> bool:
    """Whether Ray's memory monitor killed the worker behind ``error`` (or behind what it wraps)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ray.exceptions.OutOfMemoryError) or any(word in str(error) for word in _MEMORY_WORDS):
            return True
        cause = getattr(error, "cause", None)  # a RayTaskError's original exception
        error = cause if isinstance(cause, BaseException) else error.__cause__ or error.__context__
    return False


class WorkersKilledForMemory(BaseException):
    """Raised in the pipeline's thread: more of the job's workers were killed for memory than its budget.

    A ``BaseException``, as ``KeyboardInterrupt`` is (it comes from outside the code it lands in): Ray
    Data's iterator reports any ``Exception`` through it as a bug of its own, with a traceback.
    """


class MemoryWatch:
    """``with MemoryWatch(budget) as watch:`` the pipeline; past ``budget`` kills, ``WorkersKilledForMemory`` in it.

    ``watch.detail``: Ray's words for the last kill (they name the node's memory figure).
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.detail = ""
        self._client = ray_client.is_connected()
        self._job = "" if self._client else ray.get_runtime_context().get_job_id()
        self._seen = set() if self._client else set(_memory_kills(self._job))  # only this run's kills count
        self._lock = threading.Lock()
        self._active = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="memory-watch", daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._target = threading.get_ident()
        self._active = True
        if not self._client:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # after this, nothing more is raised in the pipeline's thread
            self._active = False
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            kills = {worker: detail for worker, detail in _memory_kills(self._job).items() if worker not in self._seen}
            if len(kills) > self.budget:
                self.detail = list(kills.values())[-1]
                self._interrupt()
                return

    def _interrupt(self) -> None:
        with self._lock:
            if self._active:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target),
                                                           ctypes.py_object(WorkersKilledForMemory))


def _memory_kills(job: str) -> dict[bytes, str]:
    """This job's workers that Ray's memory monitor killed: worker id -> Ray's words for it."""
    kills = {}
    for raw in state._connect_and_get_accessor().get_worker_table():
        worker = gcs_pb2.WorkerTableData.FromString(raw)
        if worker.job_id.hex() == job and worker.exit_type == common_pb2.WorkerExitType.NODE_OUT_OF_MEMORY:
            kills[worker.worker_address.worker_id] = worker.exit_detail
    return kills


class HideMemoryTraces(logging.Filter):
    """On Ray Data's console handler: its "internal error" report of workers killed for memory, dropped.

    Ray Data reports an actor's death as a bug of its own, a header line then the traceback; for a death
    of memory the run's one line says what to do (``RaySession.unwrap_errors``). The header waits for
    the record after it, and goes out with it when that one is about anything else.
    """

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler
        self.header: logging.LogRecord | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith(_INTERNAL_HEADER):
            self.header = record
            return False
        header, self.header = self.header, None
        if record.exc_info and record.exc_info[1] is not None and killed_for_memory(record.exc_info[1]):
            return False
        if header is not None:
            self.handler.emit(header)
        return True


_INTERNAL_HEADER = "Exception occurred in Ray Data or Ray Core internal code"


@contextmanager
def hiding_memory_traces() -> Iterator[None]:
    """Ray Data's console lines without its tracebacks of workers killed for memory, for the block."""
    consoles = [h for h in logging.getLogger("ray.data").handlers
                if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]
    filters = [HideMemoryTraces(handler) for handler in consoles]
    for handler, hide in zip(consoles, filters):
        handler.addFilter(hide)
    try:
        yield
    finally:
        for handler, hide in zip(consoles, filters):
            handler.removeFilter(hide)
