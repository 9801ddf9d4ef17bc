"""Pixels -> predictions and embeddings: describing the model, loading it, and the batch predictor.

The driver calls ``describe_model(weights, arch=, labels=, recipe_overrides=)`` once, before any
work: a frozen, picklable ``ModelSpec`` (architecture, class count and names, recipe, embedding
size) that every worker passes to ``load_model(spec)``. ``Predictor`` takes uint8 NHWC batches and
returns top-k predictions and/or embeddings, normalising on the device. No engine imports here.

Importing the package does not import torch: every name but the torch-free constants loads on
first use, so a process that only parses options or decodes images (the CPU stage) never pays
for torch, and ``describe_model("random")`` does not either.
"""

from __future__ import annotations

import importlib

from inference.names import EMBEDDING_DTYPES, PRECISIONS, EmbeddingDtype, Precision, WeightsError

_LAZY = {
    "ARCHS": "inference.archs",  # torch-free
    "ModelSpec": "inference.spec",  # torch-free
    "describe_model": "inference.spec",  # torch-free for random weights
    "LoadedModel": "inference.model",
    "load_model": "inference.model",
    "Predictions": "inference.predictor",
    "Predictor": "inference.predictor",
    "choose_device": "inference.device",
    "default_precision": "inference.device",
}

__all__ = ["EMBEDDING_DTYPES", "PRECISIONS", "EmbeddingDtype", "Precision", "WeightsError", *_LAZY]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'inference' has no attribute {name!r}")
