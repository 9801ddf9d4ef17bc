"""A classifier of several heads whose logits it averages, as one Linear over their inputs: ``AveragedHeads``.

A distilled classifier (DeiT's and LeViT's ``...WithTeacher`` in transformers, timm's ``deit_*_distilled_*``) gives
the mean of a class head's and a distillation head's logits. The predictor takes a network as a body giving one
embedding and a final Linear giving the logits from it (``inference.features``), so the heads become one: each head
is replaced by a ``Slot`` that places its input in its own block of one vector (scaled by the head count, which the
network's own mean undoes), and the merged Linear holds every head's weights side by side, each divided by the count:
``merged([x1, x2]) = (W1 x1 + W2 x2) / 2 + (b1 + b2) / 2``, exactly the network's logits. The embedding is then the
heads' inputs side by side (DeiT's class and distillation tokens). Stateless, so two threads may run it at once.
``averaged_heads`` checks the merge against the network's own logits before handing it over.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from inference.errors import WeightsError

Features = Callable[[nn.Module, torch.Tensor], torch.Tensor]  # (network with slots, pixels) -> (N, K*D) side by side


class Slot(nn.Module):
    """In a head's place: its input (N, D) placed at ``start`` of a (N, total) vector, times ``count``."""

    def __init__(self, start: int, total: int, count: int) -> None:
        super().__init__()
        self.start, self.total, self.count = start, total, count

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        before, after = self.start, self.total - self.start - x.shape[-1]
        return nn.functional.pad(x, (before, after)) * self.count


class AveragedHeads(nn.Module):
    """``module(pixels) -> logits`` of a network whose heads were averaged: ``head(body features)``."""

    def __init__(self, body: nn.Module, head: nn.Linear, features: Features) -> None:
        super().__init__()
        self.body, self.head, self.features = body, head, features

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, 3, H, W) -> (N, classes)
        return self.head(self.features(self.body, x))


def averaged_heads(network: nn.Module, heads: list[str], features: Features, probe: torch.Tensor,
                   logits: Features, shown: str) -> AveragedHeads:
    """``network`` (its logits: ``logits(network, x)``) with its Linear ``heads`` averaged as one, the network itself
    becoming the body; WeightsError when the merge does not give the network's own logits on ``probe`` (its heads
    are not simply averaged). ``features`` and ``logits``: module-level functions, so the result pickles."""
    linears = [network.get_submodule(name) for name in heads]
    if not all(isinstance(linear, nn.Linear) for linear in linears):
        raise WeightsError(f"{shown}: its heads {', '.join(heads)} are not all Linear layers; only a network ending in "
                           "Linear heads is read")
    with torch.inference_mode():
        own = logits(network, probe)
    merged = _merged(linears)
    start, total = 0, merged.in_features
    for name, linear in zip(heads, linears):
        parent, _, leaf = name.rpartition(".")
        setattr(network.get_submodule(parent) if parent else network, leaf, Slot(start, total, len(linears)))
        start += linear.in_features
    module = AveragedHeads(network, merged, features).eval()
    with torch.inference_mode():
        ours = module(probe)
    if not torch.allclose(own, ours, rtol=1e-4, atol=1e-4):
        raise WeightsError(f"{shown}: its logits are not the mean of its heads {', '.join(heads)}; only a network whose "
                           "logits are one Linear's, or the mean of its Linear heads', is read")
    return module


def _merged(linears: list[nn.Linear]) -> nn.Linear:
    """One Linear over the heads' inputs side by side giving the mean of their logits."""
    merged = nn.Linear(sum(linear.in_features for linear in linears), linears[0].out_features)
    biases = [linear.bias if linear.bias is not None else torch.zeros(linear.out_features) for linear in linears]
    with torch.no_grad():
        merged.weight.copy_(torch.cat([linear.weight for linear in linears], dim=1) / len(linears))
        merged.bias.copy_(torch.stack(biases).mean(0))
    return merged
