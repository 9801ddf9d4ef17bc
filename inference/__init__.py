"""Pixels -> predictions: model loading and the batch predictor every engine runs.

``load_model(weights)`` builds torchvision's ResNet50 with ImageNet, random or
user-supplied weights; ``Predictor`` takes uint8 NHWC batches and returns top-k
predictions, normalising on the device. No engine imports here.

Importing the package does not import torch: the torch-bound names load on first use, so a
process that only parses options or decodes images (the CPU stage) never pays for torch.
"""

from __future__ import annotations

from inference.names import PRECISIONS, Precision, WeightsError

__all__ = ["PRECISIONS", "LoadedModel", "Precision", "Predictions", "Predictor", "WeightsError", "choose_device",
           "default_precision", "load_model"]


def __getattr__(name: str) -> object:
    # Imported by statement, not by a name in a string, so a reader of imports (the SageMaker
    # archive's runners.sagemaker.imports) sees these modules too.
    if name in ("LoadedModel", "load_model"):
        from inference import model as module
    elif name in ("Predictions", "Predictor"):
        from inference import predictor as module
    elif name in ("choose_device", "default_precision"):
        from inference import device as module
    else:
        raise AttributeError(f"module 'inference' has no attribute {name!r}")
    return getattr(module, name)
