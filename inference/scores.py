"""How a head's logits become class scores: softmax over its classes, sigmoid for a one-logit head, and each class's
own sigmoid for a multi-label head.

A head of one logit is a binary classifier trained with sigmoid/BCE; softmax over that one logit
would give every image class 0 with score 1.0. It is read as two classes, [negative, positive],
scored [1 - p, p] with p = sigmoid(logit), label 1 when p >= 0.5. The driver's description
(``inference.describe``) counts classes with ``head_classes``, so names, ``--topk`` and the output
columns all see 2; every engine's predictor scores with ``top_classes``.

A multi-label head (a Hugging Face config's ``problem_type: multi_label_classification``, trained with one
sigmoid/BCE per class) is scored as its own pipeline scores it: each class's sigmoid, so a row's scores do not sum
to 1 and a threshold on ``score`` means what it meant in training; the top-1 is the same as softmax's. Any other
head is softmax over its classes. Importing this module does not import torch: the driver describes a model
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

# softmax: one class per image; sigmoid: a one-logit binary head; multi_label: each class's own sigmoid.
Activation = Literal["softmax", "sigmoid", "multi_label"]
ACTIVATIONS: tuple[Activation, ...] = ("softmax", "sigmoid", "multi_label")
BINARY_CLASSES = 2  # a one-logit head's classes: 0 negative, 1 positive
POSITIVE_AT = 0.5  # p >= this: the positive class, as a sigmoid/BCE classifier is trained to mean


def head_classes(logits: int, multi_label: bool = False) -> tuple[int, Activation]:
    """(classes, activation) of a head that gives ``logits`` numbers: one logit is a binary classifier's two classes;
    ``multi_label``: a head of several trained as independent yes/no answers."""
    if logits == 1:
        return BINARY_CLASSES, "sigmoid"
    return logits, "multi_label" if multi_label else "softmax"


def top_classes(logits: torch.Tensor, k: int, activation: Activation) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best (scores, labels), (N, k) float32 and int64, best first, from the head's logits (N, C)."""
    if activation == "softmax":
        return logits.float().softmax(dim=1).topk(k, dim=1)
    if activation == "sigmoid":
        return _binary_top(logits, k)
    if activation == "multi_label":
        return logits.float().sigmoid().topk(k, dim=1)
    raise ValueError(f"activation {activation!r}: choose one of {', '.join(ACTIVATIONS)}")


def _binary_top(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    p = logits[:, 0].float().sigmoid()  # (N,): the positive class's probability
    positive = p >= POSITIVE_AT
    # Ordered here, not by topk: at p == 0.5 the two scores tie and the positive class must come first.
    scores = torch.stack([torch.where(positive, p, 1 - p), torch.where(positive, 1 - p, p)], dim=1)  # (N, 2)
    labels = torch.stack([positive, ~positive], dim=1).long()  # (N, 2): [1, 0] or [0, 1]
    return scores[:, :k], labels[:, :k]
