"""A classifier trained here on photo-like classes answers the same from the fast path's pixels as from the exact's."""

from __future__ import annotations

import pytest

from benchmarks.agreement_bench import CLASSES, RECIPE, agreement, make_set, train
from preprocess import preprocess_batch


@pytest.mark.slow  # trains a small CNN on 256 JPEGs: about 1.5 CPU-minutes
def test_the_fast_path_keeps_a_trained_classifiers_top1():
    jpegs, labels = make_set(256, seed=0)
    model = train(preprocess_batch(jpegs, RECIPE, cpu_resize="exact").pixels, labels, epochs=8)
    found = agreement(model, *make_set(128, seed=1))
    assert found["accuracy"]["exact"] > 2.5 / CLASSES  # it learnt the classes (80% on this set when written)
    assert found["top1_agreement_with_exact"]["fast"] >= 0.97
