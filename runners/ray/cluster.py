"""The Ray side of a job: the session it runs in, what its predictors run on, how big each actor pool is.

``RaySession`` starts Ray in the main thread while the driver plans the input in another
(``job.driver.run_job``): it joins the cluster ``--address`` (or ``RAY_ADDRESS``, as ``ray job
submit`` sets it) names, else starts a new local Ray, never one that ``ray start`` left on the
machine. It says what the predictors will run on (``devices``: after waiting for the GPUs the run
asked for, or for one when none is up and the cluster's node types can bring them,
``runners.ray.accelerators``; the cluster's GPUs and their type), and shuts down only a Ray it
started. ``plan_scaling`` sizes both pools from the cluster: the predictor pool fixed (one actor
per GPU), the preprocessing pool started at its planned size rather than ramped up from one actor.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from typing import TypeVar

import ray

from job.errors import JobError, SetupError
from job.execution import Devices
from job.lease.reaper import Reaper
from preprocess import DEFAULT_MAX_PIXELS
from runners.ray import quiet
from runners.ray.accelerators import CUDA, Accelerator, Ask, describe_cluster, wait_for, withdraw_request
from runners.ray.memory_watch import MemoryWatch, WorkersKilledForMemory, hiding_memory_traces, killed_for_memory
from runners.ray.node_types import bringing
from runners.ray.sizing import ActorMemory, fit_pools
from storage import StorageError

T = TypeVar("T")
PREPROCESS_BATCH_ROWS = 64  # rows per preprocessed block: 64 x 224x224x3 uint8 = 9.6 MB, a comfortable Ray object size
ACCELERATOR_TYPE = "accelerator_type:"  # Ray's resource naming each node's GPU type, e.g. accelerator_type:H100
RESERVED_CPUS = 1  # CPUs left free for the driver, which writes the parts
LOCAL = "local"  # ray.init's address for a new local Ray
DEFAULT_GPU_WAIT_S = 600.0  # --gpu-wait: long enough for a cloud GPU node to boot and join
RAY_DATA_STOP_S = 30.0  # how long a run's end waits for Ray Data's executor to stop (``_let_ray_data_stop``)
# Times each pool actor is restarted after its process died (a lost node, Ray's memory monitor, a crash)
# (runners.ray.stages). Ray Data's default is for ever: on a node whose memory monitor kills
# every worker, the run would restart actors without end. Four is an actor's node lost four times in one run (a
# spot node goes about once a night, and a run rarely outlives two); a fifth death ends the run, in one line.
ACTOR_RESTARTS = 4
# The last line of a traceback our own user-fixable error ended, as Ray quotes it.
_WORKER_ERRORS = {error.__name__: error for error in (JobError, SetupError, StorageError)}
_WORKER_ERROR = re.compile(rf"^(?:[\w.]+\.)?({'|'.join(_WORKER_ERRORS)}): (.+)$", re.MULTILINE)


class RaySession:
    """``with RaySession(address):`` Ray for this job: a notebook's or test's, a cluster, or a new local one.

    ``address``: the cluster to join; None: ``RAY_ADDRESS``, else a new local Ray. ``verbose``:
    Ray's own lines as Ray prints them; otherwise quiet (``runners.ray.quiet``). ``gpu_actors``:
    the predictors the user asked to run on ``accelerator`` (``--num-gpu-actors``), waited for up
    to ``gpu_wait_s`` seconds; None: whatever the cluster has, after waiting for one when none is up
    and a node type of the cluster's autoscaler can bring them (CPU when none is up and none can come).
    """

    def __init__(self, address: str | None, verbose: bool = False, *, gpu_actors: int | None = None,
                 gpu_wait_s: float = DEFAULT_GPU_WAIT_S, accelerator: Accelerator = CUDA) -> None:
        self.address = address
        self.target = address or os.environ.get("RAY_ADDRESS") or LOCAL
        self.verbose = verbose
        self.gpu_actors = gpu_actors
        self.gpu_wait_s = gpu_wait_s
        self.accelerator = accelerator
        self.owned = False
        self.requested = False  # whether this run asked the autoscaler for accelerators (withdrawn at exit)
        self.reaper: Reaper | None = None
        self.quiet = ExitStack()

    def __enter__(self) -> RaySession:
        if not ray.is_initialized():  # a notebook or test may have started Ray already
            # Ray's daemons die with this driver, not the agents its raylet starts: if this process
            # is killed (SIGKILL, OOM), the reaper takes down what it started (see job.lease.reaper).
            self.reaper = Reaper.start()
            try:
                with nullcontext() if self.verbose else quiet.quiet_auth_notice():
                    ray.init(address=self.target, logging_level="INFO" if self.verbose else "WARNING",
                             log_to_driver=self.verbose, **self._local_options())
            except ConnectionError as e:  # --address auto (or RAY_ADDRESS) with no cluster there
                self._stop_reaper()
                where = self.target
                raise JobError(f"--address {where}: no Ray cluster to join ({str(e).splitlines()[0]}); start one with "
                               "`ray start --head`, or drop --address (and RAY_ADDRESS) to run on a local Ray") from e
            except BaseException:
                self._stop_reaper()
                raise
            self.owned = True
        if not self.verbose:
            self.quiet.enter_context(quiet.quiet_ray_data())
        return self

    def running(self) -> AbstractContextManager:
        """Around the pipeline's run: without ``verbose``, Ray's known-noise native lines dropped from stderr."""
        if self.verbose:
            return nullcontext()
        stack = ExitStack()
        stack.enter_context(quiet.dropping_native_noise())
        stack.enter_context(hiding_memory_traces())  # the run's one line says it (unwrap_errors)
        return stack

    def __exit__(self, *exc: object) -> None:
        self.quiet.close()
        if self.requested:
            withdraw_request()
        if self.owned:
            _let_ray_data_stop(RAY_DATA_STOP_S)
            ray.shutdown()
            self._stop_reaper()

    def _stop_reaper(self) -> None:
        if self.reaper is not None:
            self.reaper.stop()

    def devices(self) -> Devices:
        """Says which cluster the run is on; then, once the GPUs asked for came, what the predictors run on
        (``cluster_devices``)."""
        print(f"ray: {self._which()} ({describe_cluster(self.accelerator)})", file=sys.stderr, flush=True)
        can_grow = not (self.owned and self.target == LOCAL)
        ask = self._ask(can_grow)
        if ask is not None:
            self.requested = can_grow and self.accelerator.count() < ask.wanted
            wait_for(self.accelerator, ask, self.gpu_wait_s, can_grow=can_grow)
        return cluster_devices(self.accelerator)

    def _ask(self, can_grow: bool) -> Ask | None:
        """What the run waits for: ``--num-gpu-actors``; else one, when none is up but a node type can bring them.

        ``--gpu-wait 0`` without ``--num-gpu-actors``: the user chose the nodes that are up (CPU), said in one line.
        """
        if self.gpu_actors:
            return Ask.explicit(self.gpu_actors)
        if not can_grow or self.accelerator.count():
            return None
        types = bringing(self.accelerator.resource)
        if not types:
            return None
        ask = Ask.from_node_types(self.accelerator, types)
        if self.gpu_wait_s == 0:
            print(f"ray: {ask.reason}; --gpu-wait 0: running on the nodes that are up", file=sys.stderr, flush=True)
            return None
        return ask

    def _local_options(self) -> dict:
        """A new local Ray starts its dashboard (with ray[default]) only for --verbose: it costs the run's start-up
        a few seconds and a few hundred MB, for a page nobody opens on a sample run. A cluster keeps its own."""
        return {"include_dashboard": self.verbose} if self.target == LOCAL else {}

    def _which(self) -> str:
        """``started a local Ray at ...``, ``joined the Ray cluster at ...``, or a Ray this process had already."""
        where = self.target if self.target.startswith("ray://") else ray.get_runtime_context().gcs_address
        if not self.owned:
            return f"on the Ray this process had already started, at {where}"
        return f"started a new local Ray at {where}" if self.target == LOCAL else f"joined the Ray cluster at {where}"

    @staticmethod
    def unwrap_errors(run: Callable[[], T], scaling: Scaling | None = None) -> T:
        """``run()``, with a worker's user-fixable error re-raised as itself, one line; workers that Ray's memory
        monitor killed (after Ray's own retries) as one line naming memory and the fix (``scaling``: the run's sizes).

        Ray re-raises a task's exception as a ``RayTaskError`` subclassing its class, whose text
        is the worker's traceback; ``cause`` is the original, to which Ray Data appends retry hints.
        An actor whose constructor raised (a predictor planned on a GPU where CUDA is not usable)
        comes back as an ``ActorDiedError`` holding only the traceback's text: its last line is ours.
        """
        try:
            with MemoryWatch(memory_kill_budget(scaling)) as watch:
                return RaySession._user_errors(run)
        except WorkersKilledForMemory as e:  # Ray would have restarted them for ever (runners.ray.memory_watch)
            raise JobError(memory_line(WorkersKilledForMemory(watch.detail), scaling)) from e
        except Exception as e:  # whatever wraps it (Ray Data's, an actor's death): its chain tells
            if not killed_for_memory(e):
                raise
            raise JobError(memory_line(e, scaling)) from e

    @staticmethod
    def _user_errors(run: Callable[[], T]) -> T:
        try:
            return run()
        except ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, (StorageError, JobError)):
                raise type(e.cause)(str(e.cause).splitlines()[0]) from e
            raise
        except ray.exceptions.ActorDiedError as e:
            found = _WORKER_ERROR.findall(str(e))
            if found:
                kind, text = found[-1]
                raise _WORKER_ERRORS[kind](text) from e
            raise


_MEMORY_FIGURE = re.compile(r"(\d+(?:\.\d+)?GB(?: used)? / \d+(?:\.\d+)?GB(?: limit)?)")  # "was 7.09GB used / 23.54GB limit"


def _let_ray_data_stop(timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for Ray Data's executor threads, told to stop as the run's iterator closed.

    Ray Data gives its scheduling loop 2 s to stop, then goes on; a loop still inside a call to Ray
    when ``ray.shutdown`` runs makes Ray's core worker end the process (exit 1) before the run's own
    line is printed: seen when the memory monitor kept killing Ray Data's helper actors.
    """
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if thread.name.startswith("StreamingExecutor-"):
            thread.join(max(0.0, deadline - time.monotonic()))


def memory_kill_budget(scaling: Scaling | None) -> int:
    """Workers the memory monitor may kill before the run ends: each pool actor's restarts, and as many again
    for the tasks and Ray Data's own helper actors, which it restarts without limit."""
    actors = scaling.preprocess_actors + scaling.classify_actors if scaling else 1
    return 2 * actors * (ACTOR_RESTARTS + 1)


def memory_line(error: BaseException, scaling: Scaling | None) -> str:
    """The one line for workers Ray killed for memory: what happened, the node's figure when Ray gave it, the fix."""
    figure = _MEMORY_FIGURE.search(str(error))
    used = f" ({figure.group(1)} in use)" if figure else ""
    actors = f" (now {scaling.preprocess_actors} preprocessing, {scaling.classify_actors} predictor)" if scaling else ""
    batch = f" (now {scaling.batch_size})" if scaling else ""
    return (f"ray: workers were killed because their node ran low on memory{used}, after Ray's retries; run fewer actors "
            f"(--num-cpu-actors{actors}) or a smaller --batch-size{batch}, or on nodes with more memory, then --resume "
            "to keep the parts already committed")


def cluster_devices(accelerator: Accelerator = CUDA) -> Devices:
    """The cluster's GPUs (type from Ray's ``accelerator_type:`` resource), or CPU when it has none."""
    if not accelerator.count():
        return Devices("cpu")
    if not accelerator.is_gpu:  # a stand-in resource (tests without CUDA): its device, no GPU type
        return Devices(accelerator.device)
    resources = ray.cluster_resources()
    kinds = sorted(key.split(":", 1)[1] for key in resources if key.startswith(ACCELERATOR_TYPE))
    # Mixed types: no one name, so the plan takes what every GPU runs (fp16 rather than bf16).
    return Devices("cuda", kinds[0] if len(kinds) == 1 else None)


@dataclass(frozen=True)
class Scaling:
    gpus: int  # GPUs in the cluster; 0: the predictor runs on CPU
    classify_actors: int
    preprocess_actors: int  # the preprocessing pool's maximum
    preprocess_initial: int  # ... and the size it starts at
    batch_size: int
    accelerator: str = CUDA.resource  # the Ray resource each predictor holds one of, when ``gpus``
    # CPUs each actor of both pools reserves: 1, or a share where the pools and the steps around them
    # would not fit the cluster otherwise (``runners.ray.api``: a user's read and write tasks need a CPU too).
    actor_cpus: float = 1.0
    # Bytes each actor declares to Ray (its logical ``memory`` resource, runners.ray.sizing); 0: none declared.
    decoder_memory: int = 0
    predictor_memory: int = 0

    def predictor_resources(self) -> dict:
        """``map_batches``'s resource arguments for one predictor actor: a CPU, and its GPU (or the stand-in resource)."""
        memory = {"memory": self.predictor_memory} if self.predictor_memory else {}
        if not self.gpus:
            return {"num_cpus": self.actor_cpus, **memory}
        if self.accelerator == CUDA.resource:
            return {"num_cpus": self.actor_cpus, "num_gpus": 1, **memory}
        return {"num_cpus": self.actor_cpus, "resources": {self.accelerator: 1}, **memory}

    @property
    def calls_per_predictor(self) -> int:
        """Batches one predictor actor runs at once: two on a GPU (see ``classify_pool``), one on CPU."""
        return 2 if self.gpus else 1

    def preprocess_pool(self) -> ray.data.ActorPoolStrategy:
        """Started at its planned size (Ray Data grows a pool one actor a step from min_size)."""
        return ray.data.ActorPoolStrategy(min_size=1, max_size=self.preprocess_actors, initial_size=self.preprocess_initial)

    def classify_pool(self) -> ray.data.ActorPoolStrategy:
        """A fixed pool: GPU pools autoscaling from 1 have been seen stuck at 1 (ray#59144).

        On GPUs each actor runs two calls at once, each on its own CUDA stream (see
        ``inference.predictor``): one batch's copy to the device and readback overlap the
        other's compute, and Ray's batching of the next input overlaps both.
        """
        if not self.gpus:
            return ray.data.ActorPoolStrategy(size=self.classify_actors)
        return ray.data.ActorPoolStrategy(size=self.classify_actors, max_concurrent_calls_per_actor=self.calls_per_predictor,
                                          enable_true_multi_threading=True)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def plan_scaling(batch_size: int, gpu_actors: int | None, cpu_actors: int | None, files: int | None,
                 accelerator: Accelerator = CUDA, *, crop: int = 224, max_pixels: int = DEFAULT_MAX_PIXELS) -> Scaling:
    """Size both actor pools from the cluster (or the options) and the number of input files (None: not known, the API),
    then to what the cluster's memory holds (``runners.ray.sizing``: ``crop`` and ``max_pixels`` size a decoder)."""
    resources, available = ray.cluster_resources(), ray.available_resources()
    gpus, cpus = int(resources.get(accelerator.resource, 0)), int(resources.get("CPU", 1))
    classify = gpu_actors or max(gpus, 1)
    # A file is the unit of work: a decoder more than there are files would only idle.
    preprocess = cpu_actors or max(1, cpus - classify - RESERVED_CPUS)
    preprocess = preprocess if files is None else min(preprocess, max(files, 1))
    need = ActorMemory.estimate(batch_size, gpus > 0, 2 if gpus else 1, PREPROCESS_BATCH_ROWS, crop, max_pixels)
    if "memory" in resources:  # every Ray has it; a cluster that declares none is not limited by it here
        preprocess, classify = fit_pools(preprocess, classify, need, resources["memory"])
    # What fits now; an autoscaling cluster grows the pool towards the maximum as nodes join.
    initial = max(1, min(preprocess, int(available.get("CPU", 1)) - classify))
    if gpus == 0:
        print(f"no GPU in the Ray cluster: the predictor runs on CPU ({classify} actor)", file=sys.stderr)
    return Scaling(gpus, classify, preprocess, initial, batch_size, accelerator.resource,
                   decoder_memory=need.decoder, predictor_memory=need.predictor)
