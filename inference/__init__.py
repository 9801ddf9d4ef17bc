"""Pixels -> predictions: model loading and the batch predictor every engine runs.

``load_model(weights)`` builds torchvision's ResNet50 with ImageNet, random or
user-supplied weights; ``Predictor`` takes uint8 NHWC batches and returns top-k
predictions, normalising on the device. No engine imports here.

Importing the package does not import torch: the torch-bound names load on first use, so a
process that only parses options or decodes images (the CPU stage) never pays for torch.
"""

from __future__ import annotations

import importlib

from inference.names import PRECISIONS, Precision, WeightsError

_TORCH_BOUND = {
    "LoadedModel": "inference.model",
    "load_model": "inference.model",
    "Predictions": "inference.predictor",
    "Predictor": "inference.predictor",
    "choose_device": "inference.device",
    "default_precision": "inference.device",
}

__all__ = ["PRECISIONS", "Precision", "WeightsError", *_TORCH_BOUND]


def __getattr__(name: str) -> object:
    if name in _TORCH_BOUND:
        return getattr(importlib.import_module(_TORCH_BOUND[name]), name)
    raise AttributeError(f"module 'inference' has no attribute {name!r}")
