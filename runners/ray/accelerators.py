"""The accelerators a run's predictors need, asked of the autoscaler and waited for, and the cluster described.

A run that asks for GPU actors (``--num-gpu-actors N``) gets N GPUs or stops; it never runs on
CPU instead. On an autoscaling cluster (``ray up``, Anyscale) GPU workers join only after
something asks for them, and ``ray.cluster_resources()`` at the driver's start shows only the
nodes already up: ``wait_for`` asks the autoscaler (``ray.autoscaler.sdk.request_resources``,
one bundle shaped like a predictor actor each) and waits up to ``--gpu-wait`` seconds, saying
what it waits for; past it, one line says what came and what did not (``JobError``: exit 2,
before any part is written). The device, precision and batch size are decided after the wait.
A run that did not name a count asks for one GPU the same way when no GPU is up but one of the
cluster's node types can bring GPUs (``from_node_types``; ``runners.ray.node_types``).

An ``Accelerator`` is the Ray resource one predictor holds: ``GPU`` (CUDA) for every run; a test
of a cluster without CUDA names a custom resource, which the same code waits for and places on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import ray
from ray.autoscaler.sdk import request_resources

from job.errors import JobError
from job.execution import DeviceKind
from runners.ray.node_types import NodeType

POLL_S = 1.0  # how often the wait looks at the cluster's resources
SHOW_EVERY_S = 30.0  # how often a long wait says it still waits


@dataclass(frozen=True)
class Accelerator:
    """The Ray resource one predictor actor holds, and the device its model computes on there."""

    resource: str = "GPU"
    device: DeviceKind = "cuda"

    @property
    def is_gpu(self) -> bool:
        return self.resource == "GPU"

    def amount(self, count: int) -> str:
        """``4 GPUs``, ``1 GPU``; a custom resource by its name: ``2 x fake_gpu``."""
        return _counted(count, "GPU") if self.is_gpu else f"{count} x {self.resource}"

    def count(self) -> int:
        """How many the cluster has now (nodes that joined count at once; nodes that left no longer)."""
        return int(ray.cluster_resources().get(self.resource, 0))

    def bundle(self) -> dict[str, float]:
        """One predictor actor's shape, as ``runners.ray_job.build_dataset`` asks for it."""
        return {self.resource: 1, "CPU": 1}


CUDA = Accelerator()


@dataclass(frozen=True)
class Ask:
    """How many accelerators a run waits for, and why, in the words its lines use."""

    wanted: int
    reason: str  # what asked: ``--num-gpu-actors 2``, or the node types that can bring them
    fix: str  # what the user can do when they do not come

    @classmethod
    def explicit(cls, wanted: int) -> Ask:
        """``--num-gpu-actors wanted``."""
        return cls(wanted, f"--num-gpu-actors {wanted}", "Check the cluster's GPU node types (max_workers, quota), raise "
                   "--gpu-wait, or lower --num-gpu-actors")

    @classmethod
    def from_node_types(cls, accelerator: Accelerator, types: list[NodeType]) -> Ask:
        """No count named, none up, but ``types`` can bring ``accelerator``: one, as --num-gpu-actors 1 asks.

        One is the least that is not CPU; the predictors are then one per GPU up once the wait ends
        (``plan_scaling``), so a node type of 4 GPUs runs 4.
        """
        kinds = ", ".join(node_type.describe(accelerator.resource) for node_type in types)
        return cls(1, f"no {accelerator.resource} is up, and the cluster's node types can bring it: {kinds}",
                   "Check those node types (max_workers, quota), raise --gpu-wait, or pass --gpu-wait 0 to run on the "
                   "nodes that are up")


def wait_for(accelerator: Accelerator, ask: Ask, bound_s: float, *, can_grow: bool = True,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> int:
    """Wait until the cluster has ``ask.wanted`` of ``accelerator``, at most ``bound_s`` seconds; returns how many it has.

    ``can_grow``: False for a local Ray this run started (no autoscaler, no node will join): a
    shortfall is refused at once. Raises ``JobError`` naming what came and what did not.
    """
    wanted, have = ask.wanted, accelerator.count()
    if have >= wanted:
        return have
    if not can_grow:
        raise JobError(f"--num-gpu-actors {wanted}: this machine's local Ray has {accelerator.amount(have)}, and no node "
                       f"can join it; pass --address of a cluster with GPUs, or drop --num-gpu-actors to run on CPU")
    request_resources(bundles=[accelerator.bundle()] * wanted)  # persistent until the session clears it
    print(f"ray: waiting up to {bound_s:g} s (--gpu-wait) for {accelerator.amount(wanted)} ({ask.reason}); "
          f"the cluster has {have}; asked the autoscaler for {_counted(wanted, 'predictor bundle')} {accelerator.bundle()}",
          file=sys.stderr, flush=True)
    began = shown = clock()
    while have < wanted:
        waited = clock() - began
        if waited >= bound_s:
            raise JobError(f"{ask.reason}: {accelerator.amount(have)} of {wanted} came within --gpu-wait {bound_s:g} s "
                           f"({describe_cluster(accelerator)}), {wanted - have} never did; nothing was run or written. "
                           f"{ask.fix}")
        sleep(min(POLL_S, bound_s - waited))
        have = accelerator.count()
        if clock() - shown >= SHOW_EVERY_S:
            shown = clock()
            print(f"ray: still waiting for {accelerator.amount(wanted)}: {have} so far, {shown - began:.0f} s of "
                  f"{bound_s:g}", file=sys.stderr, flush=True)
    print(f"ray: {accelerator.amount(have)} after {clock() - began:.0f} s", file=sys.stderr, flush=True)
    return have


def withdraw_request() -> None:
    """Clear this driver's standing request, so the autoscaler may let the accelerator nodes go."""
    request_resources(bundles=[])


def describe_cluster(accelerator: Accelerator = CUDA) -> str:
    """``3 nodes, 24 CPUs, 4 GPUs`` (a custom accelerator resource named after the GPUs)."""
    nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
    resources = ray.cluster_resources()
    counts = [_counted(nodes, "node"), _counted(resources.get("CPU", 0), "CPU"), _counted(resources.get("GPU", 0), "GPU")]
    if not accelerator.is_gpu:
        counts.append(accelerator.amount(accelerator.count()))
    return ", ".join(counts)


def _counted(count: float, noun: str) -> str:
    return f"{count:g} {noun}{'' if count == 1 else 's'}"
