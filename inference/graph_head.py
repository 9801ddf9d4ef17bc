"""An exported program's module (``torch.export``, MLflow's ``pt2`` format) with its head as a module of its own.

``torch.export`` flattens a network into one graph of aten calls: there is no ``fc`` submodule to
take the embedding before. ``with_head(module)`` finds the graph's last step, which must be
``aten.linear`` (the final Linear giving the logits), and makes it a call to an ``nn.Linear``
submodule (``HEAD``) holding the same weight and bias; ``inference.features.split_head`` can then
take the embedding (its input) like any other network's. The result is a plain ``fx.GraphModule``:
unlike the exported one, it takes ``eval()`` and ``.to(device)`` as every module does.
"""

from __future__ import annotations

import torch
from torch import fx, nn

from inference.errors import WeightsError

HEAD = "final_linear"  # the new submodule's name: not one an exported graph's own attributes take


def with_head(exported: fx.GraphModule, shown: str) -> tuple[fx.GraphModule, str]:
    """(a module computing what ``exported`` does, its head's name); WeightsError when it does not end in a Linear."""
    module = fx.GraphModule(exported, exported.graph)  # a copy of the graph, sharing the weights
    graph = module.graph
    output = next(node for node in graph.nodes if node.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    last = results[0] if len(results) == 1 else None
    if not isinstance(last, fx.Node) or last.target is not torch.ops.aten.linear.default:
        found = getattr(last, "target", f"{len(results)} outputs")
        raise WeightsError(f"{shown}: its graph ends in {found}, not in the Linear that gives its logits; log a model "
                           "whose forward returns the logits of a final nn.Linear")
    features, weight, *bias = last.args
    module.add_submodule(HEAD, _linear(module, weight, bias[0] if bias else None))
    with graph.inserting_before(last):
        head = graph.call_module(HEAD, (features,))
    last.replace_all_uses_with(head)
    graph.erase_node(last)
    module.recompile()
    return module, HEAD


def _linear(module: fx.GraphModule, weight: fx.Node, bias: fx.Node | None) -> nn.Linear:
    """An nn.Linear sharing the graph's own weight and bias tensors."""
    tensor = _attribute(module, weight)
    linear = nn.Linear(tensor.shape[1], tensor.shape[0], bias=bias is not None, device="meta")
    linear.weight = nn.Parameter(tensor, requires_grad=False)
    if bias is not None:
        linear.bias = nn.Parameter(_attribute(module, bias), requires_grad=False)
    return linear


def _attribute(module: fx.GraphModule, node: fx.Node) -> torch.Tensor:
    if not isinstance(node, fx.Node) or node.op != "get_attr":
        raise WeightsError(f"the graph's final Linear takes a computed weight ({node}), not a parameter")
    return module.get_parameter(node.target) if node.target in dict(module.named_parameters()) else module.get_buffer(node.target)
