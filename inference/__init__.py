"""Pixels -> predictions and embeddings: describing the model, loading it, and the batch predictor.

The driver calls ``describe_model(weights, model=, labels=, recipe_overrides=)`` once, before any
work: a frozen, picklable ``ModelSpec`` (source, architecture, class count and names, recipe and
where it came from, embedding size) that every worker passes to ``load_model(spec)``. ``model``
names a torchvision classifier, ``timm:NAME``, ``hf:PATH`` or an MLflow model (``inference.sources``: one
record per source, ``inference.source.Source``; the spec records its ``kind``).
``Predictor`` takes uint8 NHWC batches and returns top-k predictions and/or embeddings, normalising on the device. No engine imports here.

Importing the package does not import torch: every name but the torch-free constants loads on
first use, so a process that only parses options or decodes images (the CPU stage) never pays
for torch, and ``describe_model("random")`` does not either.
"""

from __future__ import annotations

from inference.dtypes import EMBEDDING_DTYPES, PRECISIONS, EmbeddingDtype, Precision
from inference.errors import WeightsError

__all__ = ["ARCHS", "EMBEDDING_DTYPES", "PRECISIONS", "EmbeddingDtype", "LoadedModel", "ModelSpec", "Precision",
           "Predictions", "Predictor", "WeightsError", "choose_device", "describe_model", "load_model"]


def __getattr__(name: str) -> object:
    # Imported by statement, not by a name in a string, so a reader of imports (the SageMaker
    # archive's runners.sagemaker.imports) sees these modules too.
    if name == "ARCHS":
        from inference import archs as module  # torch-free
    elif name == "ModelSpec":
        from inference import spec as module  # torch-free
    elif name == "describe_model":
        from inference import describe as module  # torch-free for a torchvision name's random weights
    elif name in ("LoadedModel", "load_model"):
        from inference import model as module
    elif name in ("Predictions", "Predictor"):
        from inference import predictor as module
    elif name == "choose_device":
        from inference import device as module
    else:
        raise AttributeError(f"module 'inference' has no attribute {name!r}")
    return getattr(module, name)
