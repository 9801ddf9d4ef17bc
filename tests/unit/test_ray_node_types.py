"""Which of the autoscaler's node types can bring the predictors' accelerator, and how the run names them."""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="runners.ray.node_types reads Ray's cluster config: pip install -e '.[ray]'")

from runners.ray.accelerators import CUDA, Ask  # noqa: E402  (after the skip: it imports ray)
from runners.ray.node_types import NodeType  # noqa: E402

GPU_WORKER = NodeType("gpu-worker", {"CPU": 8, "GPU": 4}, 2)


@pytest.mark.parametrize(("node_type", "brings"), [
    (GPU_WORKER, True),
    (NodeType("any-count", {"CPU": 8, "GPU": 1}, -1), True),  # -1: no limit
    (NodeType("switched-off", {"CPU": 8, "GPU": 4}, 0), False),
    (NodeType("cpu-worker", {"CPU": 16}, 10), False),
])
def test_a_node_type_brings_gpus_when_it_has_some_and_may_start(node_type, brings):
    assert node_type.brings("GPU") is brings


def test_a_run_that_named_no_count_asks_for_one_and_names_the_node_types():
    ask = Ask.from_node_types(CUDA, [GPU_WORKER, NodeType("big", {"GPU": 8}, -1)])
    assert ask.wanted == 1
    assert ask.reason == ("no GPU is up, and the cluster's node types can bring it: "
                          "gpu-worker (4 GPU a node, up to 2 nodes), big (8 GPU a node, no limit)")
    assert "--gpu-wait 0" in ask.fix
