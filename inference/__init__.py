"""Pixels -> predictions: model loading and the batch predictor every engine runs.

``load_model(weights)`` builds torchvision's ResNet50 with ImageNet, random or
user-supplied weights; ``Predictor`` takes uint8 NHWC batches and returns top-k
predictions, normalising on the device. No engine imports here.
"""

from inference.device import Precision, choose_device, default_precision
from inference.model import LoadedModel, WeightsError, load_model
from inference.predictor import Predictions, Predictor

__all__ = [
    "LoadedModel",
    "Precision",
    "Predictions",
    "Predictor",
    "WeightsError",
    "choose_device",
    "default_precision",
    "load_model",
]
