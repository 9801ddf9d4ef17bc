"""Where each Ray stage ran: a tiny registry actor the stage actors report to.

On a heterogeneous cluster the point is that decoding runs on CPU nodes and the model on
GPU nodes; the manifest's ``placement`` shows it, per stage, as the nodes' GPU counts.
"""

from __future__ import annotations

from collections import Counter

import ray

REGISTRY_NAME = "batch-inference-placement"


@ray.remote(num_cpus=0)
class PlacementRegistry:
    def __init__(self) -> None:
        self.nodes: dict[str, list[str]] = {}

    def record(self, stage: str, node_id: str) -> None:
        self.nodes.setdefault(stage, []).append(node_id)

    def snapshot(self) -> dict[str, list[str]]:
        return self.nodes


def start_registry(run_id: str) -> ray.actor.ActorHandle:
    return PlacementRegistry.options(name=f"{REGISTRY_NAME}-{run_id}").remote()


def record_placement(run_id: str, stage: str) -> None:
    """Called in a stage actor's constructor: report the node this actor runs on."""
    registry = ray.get_actor(f"{REGISTRY_NAME}-{run_id}")
    ray.get(registry.record.remote(stage, ray.get_runtime_context().get_node_id()))


def placement_summary(registry: ray.actor.ActorHandle) -> dict[str, list[dict]]:
    """{stage: [{"node_id", "node_gpus", "actors"}]} for the manifest."""
    gpus = {node["NodeID"]: node["Resources"].get("GPU", 0) for node in ray.nodes()}
    return {
        stage: [{"node_id": node, "node_gpus": gpus.get(node, 0), "actors": count} for node, count in Counter(nodes).items()]
        for stage, nodes in ray.get(registry.snapshot.remote()).items()
    }
