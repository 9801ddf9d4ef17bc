"""Build torchvision's ResNet50 with the weights the user asked for, and its eval geometry.

``--weights`` accepts:
- ``imagenet``: torchvision's ``ResNet50_Weights.DEFAULT``, downloaded and cached as
  torchvision does (``TORCH_HOME``);
- ``random``: seeded random initialisation, identical in every process, for throughput runs;
- a local path or ``s3://`` URI of a state dict, loaded with ``weights_only=True``.
When the weights cannot be had, ``WeightsError`` says so; there is no fallback.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import torch
from torch import nn
from torchvision.models import ResNet50_Weights, resnet50

from inference.names import WeightsError
from preprocess import EvalSize
from storage import StorageError, redact, resolve, storage_errors

# Every process building ``random`` weights gets the same ones, so engines can be compared row by row.
RANDOM_WEIGHTS_SEED = 0
# The eval recipe (resize, crop, mean, std) of torchvision's default ResNet50 weights; a user
# state dict is taken to be trained with the same recipe.
RECIPE = ResNet50_Weights.DEFAULT


@dataclass
class LoadedModel:
    module: nn.Module
    eval_size: EvalSize
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


def eval_size() -> EvalSize:
    """The resize/crop the model expects, from torchvision's weights."""
    transforms = RECIPE.transforms()
    return EvalSize(resize=transforms.resize_size[0], crop=transforms.crop_size[0])


def load_model(weights: str, *, s3_endpoint_url: str | None = None) -> LoadedModel:
    """Build ResNet50 with ``weights`` (``imagenet``, ``random``, a path or an ``s3://`` URI)."""
    module = _build(weights, s3_endpoint_url)
    transforms = RECIPE.transforms()
    return LoadedModel(module.eval(), eval_size(), tuple(transforms.mean), tuple(transforms.std))


def _build(weights: str, s3_endpoint_url: str | None) -> nn.Module:
    if weights == "imagenet":
        return _imagenet()
    if weights == "random":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_WEIGHTS_SEED)
            return resnet50(weights=None)
    module = resnet50(weights=None)
    _load_state_dict(module, weights, s3_endpoint_url)
    return module


def _imagenet() -> nn.Module:
    try:
        return resnet50(weights=RECIPE)
    except (OSError, RuntimeError) as e:  # URLError is an OSError; a bad cache file a RuntimeError
        raise WeightsError(
            f"cannot get torchvision's ResNet50 ImageNet weights ({e}); on a machine without "
            "network, put them in the torch cache (TORCH_HOME) or pass --weights PATH, or use "
            "--weights random for a throughput run"
        ) from e


def _load_state_dict(module: nn.Module, uri: str, s3_endpoint_url: str | None) -> None:
    state = _read_checkpoint(uri, s3_endpoint_url)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]  # the common {"state_dict": ..., "epoch": ...} checkpoint
    if not isinstance(state, dict):
        raise WeightsError(f"{uri}: expected a ResNet50 state dict, found {type(state).__name__}")
    try:
        module.load_state_dict(state)
    except RuntimeError as e:
        raise WeightsError(f"{uri}: not a torchvision ResNet50 state dict: {str(e).splitlines()[0]}") from e


def _read_checkpoint(uri: str, s3_endpoint_url: str | None) -> object:
    try:
        location = resolve(uri, s3_endpoint_url)
        with storage_errors(uri), location.filesystem.open_input_stream(location.path) as stream:
            data = stream.read()
    except (StorageError, FileNotFoundError) as e:
        raise WeightsError(f"cannot read weights {redact(uri)}: {e}; pass imagenet, random, a path or s3:// URI") from e
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, EOFError... for bad files
        raise WeightsError(f"{uri}: not a loadable state dict ({type(e).__name__}: {e})") from e
