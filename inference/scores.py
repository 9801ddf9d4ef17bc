"""How a head's logits become class scores: softmax over its classes, or sigmoid for a one-logit head.

A head of one logit is a binary classifier trained with sigmoid/BCE; softmax over that one logit
would give every image class 0 with score 1.0. It is read as two classes, [negative, positive],
scored [1 - p, p] with p = sigmoid(logit), label 1 when p >= 0.5. The driver's description
(``inference.spec``) counts classes with ``head_classes``, so names, ``--topk`` and the output
columns all see 2; every engine's predictor scores with ``top_classes``. Any other head is
softmax over its classes. Importing this module does not import torch: the driver describes a
model without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

Activation = Literal["softmax", "sigmoid"]
ACTIVATIONS: tuple[Activation, ...] = ("softmax", "sigmoid")
BINARY_CLASSES = 2  # a one-logit head's classes: 0 negative, 1 positive
POSITIVE_AT = 0.5  # p >= this: the positive class, as a sigmoid/BCE classifier is trained to mean


def head_classes(logits: int) -> tuple[int, Activation]:
    """(classes, activation) of a head that gives ``logits`` numbers: one logit is a binary classifier's two classes."""
    return (BINARY_CLASSES, "sigmoid") if logits == 1 else (logits, "softmax")


def top_classes(logits: torch.Tensor, k: int, activation: Activation) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best (scores, labels), (N, k) float32 and int64, best first, from the head's logits (N, C)."""
    if activation == "softmax":
        return logits.float().softmax(dim=1).topk(k, dim=1)
    if activation == "sigmoid":
        return _binary_top(logits, k)
    raise ValueError(f"activation {activation!r}: choose one of {', '.join(ACTIVATIONS)}")


def _binary_top(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    p = logits[:, 0].float().sigmoid()  # (N,): the positive class's probability
    positive = p >= POSITIVE_AT
    # Ordered here, not by topk: at p == 0.5 the two scores tie and the positive class must come first.
    scores = torch.stack([torch.where(positive, p, 1 - p), torch.where(positive, 1 - p, p)], dim=1)  # (N, 2)
    labels = torch.stack([positive, ~positive], dim=1).long()  # (N, 2): [1, 0] or [0, 1]
    return scores[:, :k], labels[:, :k]
