"""The network as (embedding, logits) in one pass: ``FeaturesAndLogits(module, arch)``.

The final Linear's input is the embedding (the pooled feature: ResNet50's 2048-d average pool),
so the predictor gets both from one forward. It shares every parameter with ``module`` and
leaves ``module`` itself as it was. Use it wherever a caller needs the embedding, the logits,
or both; ``inference.build`` makes the module it wraps.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from inference.archs import Arch


class FeaturesAndLogits(nn.Module):
    """``module`` as (features (N, D), logits (N, C) or None): the body up to the head, then the head.

    ``predictions=False``: embeddings only, the head is skipped. One module, so ``torch.compile``
    sees one graph either way; ``head(body(x))`` is exactly ``module(x)``.
    """

    def __init__(self, module: nn.Module, arch: Arch, predictions: bool = True) -> None:
        super().__init__()
        body, head = split_head(module, arch)
        self.body = body
        self.head = head if predictions else None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:  # (N, 3, H, W) -> (N, D), (N, C)
        features = self.body(x)
        return features, None if self.head is None else self.head(features)


def split_head(module: nn.Module, arch: Arch) -> tuple[nn.Module, nn.Linear]:
    """(body, head): ``body(x)`` is the embedding, ``head(body(x)) == module(x)``; parameters shared.

    The modules on the path to the head are shallow copies with their own child table, so
    ``module`` itself keeps its head (its state dict and forward are unchanged).
    """
    *parents, leaf = arch.head.split(".")
    body = node = _own_children(module)
    for name in parents:
        child = _own_children(node._modules[name])
        node._modules[name] = child
        node = child
    head = node._modules[leaf]
    if not isinstance(head, nn.Linear):
        raise TypeError(f"{arch.name}: {arch.head} is a {type(head).__name__}, not the final nn.Linear")
    node._modules[leaf] = nn.Identity()
    return body, head


def _own_children(module: nn.Module) -> nn.Module:
    twin = copy.copy(module)  # shares parameters and buffers; gets its own table of children below
    twin._modules = module._modules.copy()
    return twin
