"""Where each Ray stage ran: a tiny registry actor the stage actors report to.

On a heterogeneous cluster the point is that decoding runs on CPU nodes and the model on
GPU nodes; the manifest's ``placement`` shows it, per stage, as the nodes' GPU counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

REGISTRY_NAME = "batch-inference-placement"


@ray.remote(num_cpus=0)
class PlacementRegistry:
    def __init__(self) -> None:
        self.nodes: dict[str, list[str]] = {}
        self.facts: dict[str, list[dict]] = {}

    def record(self, stage: str, node_id: str, facts: dict) -> None:
        self.nodes.setdefault(stage, []).append(node_id)
        self.facts.setdefault(stage, []).append(facts)

    def snapshot(self) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
        return self.nodes, self.facts


def on_driver_node() -> NodeAffinitySchedulingStrategy:
    """Where the run's own helper actors go: the driver's node, which lives as long as the run does.

    Ray puts a no-CPU actor on any node, a worker's too; a worker node lost mid-run would take
    the helper with it, and every stage actor restarted after the loss asks for it by name.
    """
    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


def start_registry(run_id: str) -> ray.actor.ActorHandle:
    return PlacementRegistry.options(name=f"{REGISTRY_NAME}-{run_id}", scheduling_strategy=on_driver_node()).remote()


def record_placement(run_id: str, stage: str, **facts: object) -> None:
    """Called in a stage actor's constructor: report the node this actor runs on, and what it chose (``facts``)."""
    registry = ray.get_actor(f"{REGISTRY_NAME}-{run_id}")
    ray.get(registry.record.remote(stage, ray.get_runtime_context().get_node_id(), facts))


def placement_summary(registry: ray.actor.ActorHandle, accelerator: str = "GPU") -> tuple[dict[str, list[dict]], dict[str, dict[str, list]]]:
    """For the manifest: {stage: [{"node_id", "node_gpus", "actors"}]}, and {stage: {fact: its distinct values}}.

    ``node_gpus`` counts the node's ``accelerator`` resource: its GPUs, or the resource that stands for them.
    """
    gpus = {node["NodeID"]: node["Resources"].get(accelerator, 0) for node in ray.nodes()}
    nodes, facts = ray.get(registry.snapshot.remote())
    placement = {
        stage: [{"node_id": node, "node_gpus": gpus.get(node, 0), "actors": count} for node, count in Counter(ids).items()]
        for stage, ids in nodes.items()
    }
    distinct = {stage: {key: distinct_values(f[key] for f in reports) for key in reports[0]} for stage, reports in facts.items() if reports}
    return placement, {stage: values for stage, values in distinct.items() if values}


def distinct_values(values: Iterable[object]) -> list:
    """Each value once, as JSON writes it (``False`` stays false, ``None`` null), in a stable order."""
    unique = {json.dumps(value, sort_keys=True, default=str): value for value in values}
    return [unique[key] for key in sorted(unique)]


def alive_nodes() -> set[str]:
    return {node["NodeID"] for node in ray.nodes() if node.get("Alive")}


def recovery(alive_at_start: set[str], placement: dict[str, list[dict]], rows_received_twice: int) -> dict:
    """For the manifest: what the run lost and redid, as far as Ray lets the driver see it.

    ``nodes_lost``: nodes alive when the pipeline started and gone at its end; ``actors_lost``: per
    stage, the actors started on them (Ray restarted each elsewhere, ``placement`` shows where);
    ``rows_received_twice``: rows of blocks Ray redid that had already arrived (dropped by the collector).
    """
    lost = sorted(alive_at_start - alive_nodes())
    actors = {stage: sum(p["actors"] for p in nodes if p["node_id"] in lost) for stage, nodes in placement.items()}
    return {"nodes_lost": lost, "actors_lost": actors, "rows_received_twice": rows_received_twice}
