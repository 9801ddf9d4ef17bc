"""python -m runners.local_job: one machine, plain PyTorch: the baseline the engines must beat.

    python -m runners.local_job --input s3://bucket/images/ --output ./preds/ --workers 7

What a user writes without an engine: a ``torch.utils.data.IterableDataset`` over the
planned input files, sharded across ``DataLoader`` worker processes (``get_worker_info``),
each worker reading its files with pyarrow and yielding preprocessed uint8 batches; the
main process classifies them on one device (CUDA when there is one, with pinned memory) and
commits each input file's part as soon as all its rows are in (``job.output.parts``).
Same preprocessing, model and output as the Ray, Spark and SageMaker jobs.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from multiprocessing.context import BaseContext

import torch
import torch.multiprocessing
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from job.cli import positive_int
from job.config import JobConfig
from job.driver import commands
from job.errors import JobError
from job.engine import Engine, EngineRun, Job, ModelRun
from job.execution import Capabilities, Devices, Execution, this_machine
from job.feedback import IdleMeter, SharedFeedback
from job.several.stages import ClassifyMany, PartCollectors, groups_of, recipe_groups
from job.input.plan import InputPlan
from job.stages import Batch, PixelBatch, Preprocess

# Batches each worker keeps ready (DataLoader's default): enough to hide a slow file open.
PREFETCH_BATCHES = 2
# Workers start from a fresh interpreter: the driver has used the S3 client and torch's
# thread pool, and neither is safe to fork (a forked worker can hang on an inherited lock).
DEFAULT_START_METHOD = "spawn"
# Without --workers, an input of fewer rows runs in the main process: a worker's fresh interpreter imports for about
# 1.3 s before its first batch (the 2-vCPU VM), longer than decoding 1,000 rows takes (about 1.5 ms a row), so for
# such an input the worker only delays the first prediction (the built-in sample: 3.6 s with one, 2.6 s without).
WORKERS_FROM_ROWS = 1000
WORKER_DIED = "DataLoader worker (pid"  # how torch's errors for a worker that died begin (its watchdog, its SIGCHLD handler)
# How long a worker's exit waits for the batches it queued to be handed over (milliseconds each: the pixels copied into
# shared memory, a handle sent). Its parent gives a stopping worker 5 s (torch's MP_STATUS_CHECK_INTERVAL), then SIGTERM.
HAND_OVER_WAIT_S = 2.0


class PlannedFiles(IterableDataset):
    """The planned input files, preprocessed: yields (batch, pixels) per ``batch_rows`` rows.

    Each DataLoader worker takes every ``num_workers``-th file, so every row is read once. The
    pixels travel as a tensor beside the batch, so the DataLoader shares and pins them.
    """

    def __init__(self, plan: InputPlan, config: JobConfig, execution: Execution, feedback: SharedFeedback | None,
                 plan_file: str | None = None, runs: tuple[ModelRun, ...] = ()) -> None:
        self.plan, self.config, self.execution, self.feedback = plan, config, execution, feedback
        self.plan_file = plan_file  # where workers read the plan (``__getstate__``); None: it travels with the dataset
        self.runs = runs  # several models (job.several): each file made in the recipes of the models that score it

    def __getstate__(self) -> dict:
        # A spawned worker gets this object through a pipe its parent writes before the worker reads it. A worker
        # killed as it starts (the kernel's OOM killer) then leaves the parent blocked for good on a full pipe,
        # if the object is larger than the pipe (64 KB): multiprocessing's parent holds the read end open too.
        # The plan (thousands of files or objects: megabytes) goes through a file, so the pipe holds a few KB.
        return {**self.__dict__, "plan": None} if self.plan_file is not None else dict(self.__dict__)

    def __iter__(self) -> Iterator[tuple[Batch, torch.Tensor | None]]:
        if self.plan is None:
            with open(self.plan_file, "rb") as f:
                self.plan = pickle.load(f)
        worker = get_worker_info()
        shard = range(len(self.plan.files)) if worker is None else range(worker.id, len(self.plan.files), worker.num_workers)
        recipes, groups = recipe_groups(self.runs) if len(self.runs) > 1 else ((), ())
        preprocess = Preprocess(self.config, self.execution, self.feedback.poll if self.feedback is not None else None,
                                recipes)
        rows = max((run.execution.batch_size for run in self.runs), default=self.execution.batch_size)
        for index in shard:
            several = groups_of(self.runs, groups, index) if groups else None
            for batch in preprocess.read(self.plan, index, rows, several):
                if isinstance(batch, PixelBatch):  # (K, crop, crop, 3) uint8, handed over as a shared tensor
                    yield dataclasses.replace(batch, pixels=None), torch.from_numpy(batch.pixels)
                else:
                    yield batch, None


def loader_for(files: PlannedFiles, workers: int, context: BaseContext, pin_memory: bool) -> DataLoader:
    """The DataLoader the engine runs ``files`` through: ``workers`` processes started by ``context`` (none: the main
    process reads), each with its batches handed over before it exits."""
    return DataLoader(
        files,
        batch_size=None,  # the dataset yields whole batches
        num_workers=workers,
        pin_memory=pin_memory,
        multiprocessing_context=context if workers else None,
        prefetch_factor=PREFETCH_BATCHES if workers else None,
        worker_init_fn=_hand_over_before_exit,
    )


def _hand_over_before_exit(worker_id: int) -> None:
    """Each DataLoader worker, as it starts: its interpreter's exit first lets the batches it queued be handed over.

    A worker told to stop (a Ctrl-C, a failed batch) exits without waiting for its queue's feeder thread, which
    torch's worker loop cancels the join of. That thread, still in torch's C++ as the interpreter finalises (moving a
    batch's pixels into shared memory, freeing them once sent), is unwound through frames that cannot be unwound: the
    worker aborts ("terminate called without an active exception"; "killed by signal: Aborted" in the driver's
    words, when it still listens). Exit hooks run before that point, and the thread ends once its queue is closed.
    """
    atexit.register(_join_queue_feeders, HAND_OVER_WAIT_S)


def _join_queue_feeders(timeout_s: float) -> None:
    """Wait up to ``timeout_s`` in all for this process's ``multiprocessing`` queue feeder threads to end."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if thread.name == "QueueFeederThread":  # multiprocessing.queues.Queue._start_thread names it so
            thread.join(max(0.0, deadline - time.monotonic()))


def run_locally(job: Job, args: argparse.Namespace) -> EngineRun:
    """Classify every pending row in the main process; commit each input file's part once all its rows are in.

    A worker that dies (killed by the OOM killer, say) ends the run in one line; the parts committed before stay.
    """
    workers = workers_for(job.pending, args.workers)
    with tempfile.TemporaryDirectory(prefix="local-job-plan-") as folder, _worker_deaths_in_one_line(workers):
        plan_file = _written_plan(job.pending, folder) if workers else None
        return _run(job, args, workers, plan_file)


def _written_plan(plan: InputPlan, folder: str) -> str:
    """The plan pickled into a file in ``folder``, for the workers (``PlannedFiles.__getstate__``)."""
    path = os.path.join(folder, "plan.pickle")
    with open(path, "wb") as f:
        pickle.dump(plan, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


@contextmanager
def _worker_deaths_in_one_line(workers: int) -> Iterator[None]:
    """A DataLoader worker that died: JobError naming memory and the fix, not torch's traceback.

    torch says so as a RuntimeError, from its SIGCHLD handler or its queue's watchdog, wherever the main thread is.
    """
    try:
        yield
    except RuntimeError as e:
        if not str(e).startswith(WORKER_DIED):
            raise
        died = str(e).splitlines()[0].strip().rstrip(".")
        raise JobError(f"{died}: the kernel ends a process this way when memory runs out; run with fewer --workers "
                       f"(now {workers}) or a smaller --batch-size, then --resume to keep the parts already committed") from e


def _run(job: Job, args: argparse.Namespace, workers: int, plan_file: str | None) -> EngineRun:
    context = torch.multiprocessing.get_context(args.start_method)
    # --decode auto: the workers' routers read the model's word from shared memory.
    feedback = SharedFeedback(context) if job.execution.auto_adapts else None
    loader = loader_for(PlannedFiles(job.pending, job.config, job.execution, feedback, plan_file, job.runs), workers,
                        context, pin_memory=job.execution.device == "cuda")
    # The workers start first: each spends a second or more importing in a fresh interpreter, which the main
    # process's model build overlaps instead of preceding.
    batches = _started(loader)
    try:
        classify = ClassifyMany.of(job.config, job.runs)  # every model of the run, each loaded once
        meter = IdleMeter(feedback.post) if feedback is not None else nullcontext()
        collectors = PartCollectors(job.runs, job.pending.files)
        for batch, pixels in batches:
            if pixels is not None:
                batch = dataclasses.replace(batch, pixels=pixels.numpy())  # pinned memory stays pinned
            with meter:
                rows = classify(batch)
            collectors.add(rows)
    finally:
        # However the loop ends (a Ctrl-C, a failure), its workers stop and their queues and shared memory are
        # released now, in order, not at the interpreter's exit, where the resource tracker would warn of them.
        del batches, loader, feedback
    collectors.check_complete()
    settings = {"workers": workers, "start_method": args.start_method,
                "device": str(classify.classifiers[0].predictor.device)}
    return collectors.report({"local": settings})


def workers_for(pending: InputPlan, asked: int | None) -> int:
    """DataLoader workers for ``pending``: ``asked`` (--workers), else CPUs - 1 (at least 1), or none for an input of
    fewer than ``WORKERS_FROM_ROWS`` rows; never more than its files (a file is the unit of work: more would idle)."""
    if asked is None:
        asked = 0 if pending.rows < WORKERS_FROM_ROWS else max(1, (os.cpu_count() or 1) - 1)
    return min(asked, len(pending.files))


def _started(loader: DataLoader) -> Iterator:
    """``iter(loader)``, its worker processes started with Ctrl-C ignored (a disposition they keep through exec).

    A terminal's Ctrl-C reaches the whole process group; the main process alone answers it (one line,
    exit 130) and shuts the workers down. A worker still importing would otherwise print a traceback of its own.
    """
    if threading.current_thread() is not threading.main_thread():
        return iter(loader)  # signal handlers belong to the main thread
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return iter(loader)  # starts the workers now
    finally:
        signal.signal(signal.SIGINT, previous)


def add_local_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("local")
    group.add_argument("--workers", type=positive_int(0), default=None,
                       help="DataLoader worker processes that read and preprocess; 0: in the main process "
                            f"(not given: CPUs - 1, at least 1; none for an input of under {WORKERS_FROM_ROWS:,} rows, "
                            "which a worker's start-up would only delay)")
    group.add_argument("--start-method", choices=("spawn", "forkserver", "fork"), default=DEFAULT_START_METHOD,
                       help="how workers start; fork is faster to start but unsafe once the S3 client or torch threads are running")


class ThisMachine:
    """The local "engine": nothing to start; the model runs on this machine's first GPU, else its CPU."""

    def __enter__(self) -> ThisMachine:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def devices(self) -> Devices:
        return this_machine()


ENGINE = Engine(
    name="local", module="runners.local_job", description=__doc__.splitlines()[0],
    capabilities=Capabilities(),  # --decode auto adapts: the model's word reaches the workers through shared memory
    add_arguments=add_local_arguments, start=lambda args: ThisMachine(),
    execute=lambda job, machine, args: run_locally(job, args),
)
main, cli = commands(ENGINE)

if __name__ == "__main__":
    sys.exit(cli())
