"""The worker node types an autoscaling cluster can bring, as its autoscaler reports them to Ray's GCS.

Use it to learn, before any GPU node is up, whether one could come. An autoscaler that knows its
node types (Anyscale's does) reports them to the GCS as a ``ClusterConfig``: each node group's
resources per node and ``max_count`` (-1: no limit). Ray 2.60 has no public call to read it;
Ray Data's own cluster autoscaler reads it with ``ray._private.state.state.get_cluster_config()``,
and so does ``node_types`` here, in this one place. A cluster whose autoscaler reports nothing (a
static cluster, a local Ray, ``ray up``'s and KubeRay's autoscalers in Ray 2.60, which keep
their node types to themselves) and a driver on Ray Client (``ray://``, which has no GCS
connection of its own) give no node types: the run then decides on the nodes that are up.
"""

from __future__ import annotations

from dataclasses import dataclass

import ray
import ray._private.state


@dataclass(frozen=True)
class NodeType:
    """One of the cluster's node groups, as the autoscaler reported it."""

    name: str
    resources: dict[str, float]  # one node's resources
    max_count: int  # nodes of this type the autoscaler may start; -1: no limit

    def brings(self, resource: str) -> bool:
        """Whether a node of this type has ``resource`` and the autoscaler may start one."""
        return self.resources.get(resource, 0) > 0 and self.max_count != 0

    def describe(self, resource: str) -> str:
        """``gpu-worker (4 GPU a node, up to 8 nodes)``."""
        most = "no limit" if self.max_count < 0 else f"up to {self.max_count} node{'' if self.max_count == 1 else 's'}"
        return f"{self.name} ({self.resources[resource]:g} {resource} a node, {most})"


def node_types() -> list[NodeType]:
    """The node types the cluster's autoscaler reported; empty when it reported none (see the module's doc)."""
    if ray.util.client.ray.is_connected():
        return []
    config = ray._private.state.state.get_cluster_config()
    if config is None:
        return []
    return [NodeType(group.name, dict(group.resources), group.max_count) for group in config.node_group_configs]


def bringing(resource: str) -> list[NodeType]:
    """The node types that can bring ``resource`` (``GPU``, or a test's stand-in): it on each node, max_count not 0."""
    return [node_type for node_type in node_types() if node_type.brings(resource)]
