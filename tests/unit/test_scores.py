"""Logits -> class scores: softmax over a head's classes; a one-logit head is a binary classifier."""

from __future__ import annotations

import pytest
import torch

from inference.scores import head_classes, top_classes


def test_a_one_logit_head_counts_two_classes_and_any_other_its_own():
    assert head_classes(1) == (2, "sigmoid")
    assert head_classes(2) == (2, "softmax") and head_classes(1000) == (1000, "softmax")


def test_one_logit_scores_negative_and_positive_from_its_sigmoid():
    logits = torch.tensor([[2.0], [-1.0], [0.0], [-1e-9]])  # (N, 1)
    p = torch.sigmoid(logits[:, 0])
    scores, labels = top_classes(logits, 2, "sigmoid")
    assert labels.tolist() == [[1, 0], [0, 1], [1, 0], [1, 0]]  # p >= 0.5 is positive: 0.5 itself, and what rounds to it
    expected = torch.stack([torch.where(p >= 0.5, p, 1 - p), torch.where(p >= 0.5, 1 - p, p)], dim=1)
    torch.testing.assert_close(scores, expected, rtol=0, atol=0)
    top1_scores, top1_labels = top_classes(logits, 1, "sigmoid")
    assert top1_labels.tolist() == [[1], [0], [1], [1]] and torch.equal(top1_scores, scores[:, :1])


def test_softmax_is_the_usual_top_k_and_an_unknown_activation_is_refused():
    logits = torch.tensor([[1.0, 3.0, 2.0]])
    scores, labels = top_classes(logits, 2, "softmax")
    assert labels.tolist() == [[1, 2]]
    torch.testing.assert_close(scores, logits.softmax(1)[:, [1, 2]])
    with pytest.raises(ValueError, match="activation 'tanh': choose one of softmax, sigmoid"):
        top_classes(logits, 2, "tanh")


def test_a_multi_label_head_scores_each_class_by_its_own_sigmoid():
    assert head_classes(5, multi_label=True) == (5, "multi_label")
    assert head_classes(1, multi_label=True) == (2, "sigmoid")  # one logit: the binary classifier either way
    logits = torch.tensor([[2.0, -1.0, 0.5], [-3.0, 1.0, 1.5]])
    scores, labels = top_classes(logits, 3, "multi_label")
    assert labels.tolist() == top_classes(logits, 3, "softmax")[1].tolist()  # the same order, top-1 included
    torch.testing.assert_close(scores, logits.sigmoid().sort(dim=1, descending=True).values)
    assert (scores.sum(dim=1) - 1).abs().min() > 0.1  # a row's scores do not sum to 1
