"""The network as (embedding, logits) in one pass: ``FeaturesAndLogits(module, head)``.

A classifier's embedding is its final Linear's input (ResNet50's 2048-d average pool, a ViT's
class token after its norm), so the predictor gets both from one forward: ``head`` is that
Linear's dotted path in ``module`` (``fc``, ``head.fc``, ``model.classifier``). An embedder (a
CLIP, SigLIP or DINOv2 tower: ``head`` None) returns its embedding itself and has no logits.
The wrapper shares every parameter with ``module`` and leaves ``module`` itself as it was. Use it
wherever a caller needs the embedding, the logits, or both; ``inference.model`` makes the module.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


class FeaturesAndLogits(nn.Module):
    """``module`` as (features (N, D), logits (N, C) or None): the body up to the head, then the head.

    ``predictions=False``: embeddings only, the head is skipped. One module, so ``torch.compile``
    sees one graph either way; ``head(body(x))`` is exactly ``module(x)``.
    """

    def __init__(self, module: nn.Module, head: str | None, predictions: bool = True) -> None:
        super().__init__()
        if head is None:  # an embedder: module(x) is the embedding
            if predictions:
                raise ValueError("a module without a head has no logits: ask for embeddings only")
            self.body, self.head = module, None
            return
        body, linear = split_head(module, head)
        self.body = body
        self.head = linear if predictions else None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:  # (N, 3, H, W) -> (N, D), (N, C)
        features = self.body(x)
        return features, None if self.head is None else self.head(features)


def split_head(module: nn.Module, head: str) -> tuple[nn.Module, nn.Linear]:
    """(body, head): ``body(x)`` is the embedding, ``head(body(x)) == module(x)``; parameters shared.

    The modules on the path to the head are shallow copies with their own child table, so
    ``module`` itself keeps its head (its state dict and forward are unchanged).
    """
    *parents, leaf = head.split(".")
    body = node = _own_children(module)
    for name in parents:
        child = _own_children(node._modules[name])
        node._modules[name] = child
        node = child
    linear = node._modules[leaf]
    if not isinstance(linear, nn.Linear):
        raise TypeError(f"{type(module).__name__}: {head} is a {type(linear).__name__}, not the final nn.Linear")
    node._modules[leaf] = nn.Identity()
    return body, linear


def _own_children(module: nn.Module) -> nn.Module:
    twin = copy.copy(module)  # shares parameters and buffers; gets its own table of children below
    twin._modules = module._modules.copy()
    return twin
