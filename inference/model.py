"""Build ResNet50 with the weights the user asked for, and its eval geometry.

``--weights`` accepts:
- ``imagenet``: torchvision's ``ResNet50_Weights.DEFAULT`` (IMAGENET1K_V2) checkpoint, downloaded
  and cached as torchvision does (``TORCH_HOME``, same file name, hash checked);
- ``random``: seeded random initialisation, identical in every process, for throughput runs;
- a local path or ``s3://`` URI of a state dict, loaded with ``weights_only=True``.
When the weights cannot be had, ``WeightsError`` says so; there is no fallback.

Weights are read once per process: the driver's check, ``compare`` and packaging each call
``load_model`` and get a fresh module built from the cached state dict, with no second download.
The network comes from ``inference.resnet`` (torch only): nothing here imports torchvision.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass

import torch
from torch import nn

from inference.names import RANDOM_WEIGHTS, WeightsError
from inference.resnet import ResNet50
from preprocess.recipe import IMAGENET_RECIPE, Recipe
from storage import StorageError, redact, resolve, storage_errors

# Every process building ``random`` weights gets the same ones, so engines can be compared row by row.
RANDOM_WEIGHTS_SEED = 0
# torchvision's ResNet50_Weights.IMAGENET1K_V2 (= DEFAULT); its eval recipe is preprocess.recipe's
# IMAGENET_RECIPE. A user state dict is taken to be trained with the same recipe.
IMAGENET_URL = "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"

StateDict = dict[str, torch.Tensor]


@dataclass
class LoadedModel:
    module: nn.Module
    recipe: Recipe  # the pixels it expects: resize, crop, mean, std


def load_model(weights: str, *, s3_endpoint_url: str | None = None) -> LoadedModel:
    """Build ResNet50 with ``weights`` (``imagenet``, ``random``, a path or an ``s3://`` URI).

    Each call returns its own module (callers move it to their device); the weights behind it
    are read at most once per process.
    """
    module = _module_from(_state_dict(weights, s3_endpoint_url), weights)
    return LoadedModel(module.eval(), IMAGENET_RECIPE)


def clear_weights_cache() -> None:
    """Forget every state dict read so far (tests; a process that must re-read a changed file)."""
    _state_dict.cache_clear()


@functools.lru_cache(maxsize=4)
def _state_dict(weights: str, s3_endpoint_url: str | None) -> StateDict:
    """The weights as CPU tensors, read once per (weights, endpoint) in this process."""
    if weights == "imagenet":
        return _imagenet()
    if weights == RANDOM_WEIGHTS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_WEIGHTS_SEED)
            return ResNet50().state_dict()
    return _user_state_dict(weights, s3_endpoint_url)


def _module_from(state: StateDict, uri: str) -> nn.Module:
    with torch.device("meta"):  # no init work: every tensor comes from ``state``
        module = ResNet50()
    # Copies, so no caller's module (moved, cast, compiled) can touch the cached tensors.
    owned = {name: tensor.clone() for name, tensor in state.items()}
    try:
        module.load_state_dict(owned, assign=True)
    except RuntimeError as e:
        raise WeightsError(f"{redact(uri)}: not a torchvision ResNet50 state dict: {str(e).splitlines()[0]}") from e
    return module


def _imagenet() -> StateDict:
    try:
        return torch.hub.load_state_dict_from_url(IMAGENET_URL, progress=False, check_hash=True, weights_only=True)
    except (OSError, RuntimeError) as e:  # URLError is an OSError; a bad cache file a RuntimeError
        raise WeightsError(
            f"cannot get torchvision's ResNet50 ImageNet weights ({e}); on a machine without "
            "network, put them in the torch cache (TORCH_HOME) or pass --weights PATH, or use "
            "--weights random for a throughput run"
        ) from e


def _user_state_dict(uri: str, s3_endpoint_url: str | None) -> StateDict:
    state = _read_checkpoint(uri, s3_endpoint_url)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]  # the common {"state_dict": ..., "epoch": ...} checkpoint
    if not isinstance(state, dict):
        raise WeightsError(f"{uri}: expected a ResNet50 state dict, found {type(state).__name__}")
    _module_from(state, uri)  # refuse a wrong architecture now, once, rather than on every load
    # fp32 like a freshly built module, whatever precision the file was saved in.
    return {name: t.float() if t.is_floating_point() else t for name, t in state.items()}


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


def __getattr__(name: str) -> object:
    """``RECIPE``: torchvision's ``ResNet50_Weights.DEFAULT``, imported only when asked for."""
    if name == "RECIPE":
        from torchvision.models.resnet import ResNet50_Weights  # torchvision whole: only benchmarks ask

        return ResNet50_Weights.DEFAULT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
