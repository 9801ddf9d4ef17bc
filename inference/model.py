"""Build the model a ``ModelSpec`` describes, with its weights, once per worker.

``load_model(spec)`` is what every worker calls (a Ray actor, a Spark Python worker, SageMaker's
``model_fn``), with the spec its driver made once (``inference.describe_model``). A plain
weights string still works (``load_model("random")``): it is described here first, with the
default architecture and no labels or recipe changes.

The weights behind a spec:
- ``imagenet``: torchvision's ImageNet weights for the architecture (ResNet50: ``IMAGENET_URL``,
  IMAGENET1K_V2), downloaded and cached as torchvision does (``TORCH_HOME``, hash checked);
- ``random``: seeded random initialisation, identical in every process, for throughput runs;
- a user's checkpoint, path or ``s3://`` URI (``inference.checkpoint``: layouts, prefixes,
  ``weights_only=True``), refused if its bytes changed since the driver described it.
When the weights cannot be had, ``WeightsError`` says so; there is no fallback.

Weights are read once per process: the driver's description, ``compare`` and packaging each
get a fresh module built from the cached state dict, with no second read or download.
ResNet50 comes from ``inference.resnet``: nothing on its path imports torchvision.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import nn

from inference.architecture import build, module_with
from inference.archs import DEFAULT_ARCH, Arch, arch_named
from inference.checkpoint import Checkpoint, read_checkpoint
from inference.names import IMAGENET_WEIGHTS, RANDOM_WEIGHTS, WeightsError
from inference.spec import ModelSpec, describe_model
from preprocess.recipe import Recipe
from storage import redact

# Every process building ``random`` weights gets the same ones, so engines can be compared row by row.
RANDOM_WEIGHTS_SEED = 0
# torchvision's ResNet50_Weights.IMAGENET1K_V2 (= DEFAULT); its eval recipe is preprocess.recipe's
# IMAGENET_RECIPE. Fetched without torchvision, which the other architectures' weights need.
IMAGENET_URL = "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"


@dataclass
class LoadedModel:
    module: nn.Module  # eval mode, on the CPU, this caller's own (move it, cast it, compile it)
    spec: ModelSpec  # what it is: architecture, classes, names, recipe, embedding size

    @property
    def recipe(self) -> Recipe:  # the pixels it expects: resize, crop, mean, std
        return self.spec.recipe


def load_model(model: ModelSpec | str, *, s3_endpoint_url: str | None = None) -> LoadedModel:
    """Build the model ``model`` describes (a ``ModelSpec``, or a ``--weights`` value to describe first).

    Each call returns its own module; the weights behind it are read at most once per process.
    """
    spec = model if isinstance(model, ModelSpec) else describe_model(model, s3_endpoint_url=s3_endpoint_url)
    checkpoint = weights_for(spec.weights, spec.arch, s3_endpoint_url)
    if spec.weights_sha256 is not None and checkpoint.sha256 != spec.weights_sha256:
        raise WeightsError(f"{redact(spec.weights)} changed after the job checked it (sha256 {checkpoint.sha256[:12]}..., "
                           f"was {spec.weights_sha256[:12]}...); leave the weights in place while a job runs, and run it again")
    return LoadedModel(module_with(checkpoint.state, arch_named(spec.arch), redact(spec.weights)), spec)


def clear_weights_cache() -> None:
    """Forget every state dict read so far (tests; a process that must re-read a changed file)."""
    weights_for.cache_clear()


@functools.lru_cache(maxsize=4)
def weights_for(weights: str, arch: str, s3_endpoint_url: str | None) -> Checkpoint:
    """The weights (CPU tensors) and the metadata saved with them, read once per process."""
    if weights == IMAGENET_WEIGHTS:
        return Checkpoint(_imagenet(arch_named(arch)), None, None, None)
    if weights == RANDOM_WEIGHTS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_WEIGHTS_SEED)
            return Checkpoint(build(arch_named(arch)).state_dict(), None, None, None)
    return read_checkpoint(weights, s3_endpoint_url)


def _imagenet(arch: Arch) -> dict[str, torch.Tensor]:
    try:
        if arch.name == DEFAULT_ARCH:
            return torch.hub.load_state_dict_from_url(IMAGENET_URL, progress=False, check_hash=True, weights_only=True)
        from torchvision.models import get_model_weights  # the other architectures: torchvision's own table

        return get_model_weights(arch.name).DEFAULT.get_state_dict(progress=False, check_hash=True, weights_only=True)
    except (OSError, RuntimeError) as e:  # URLError is an OSError; a bad cache file a RuntimeError
        raise WeightsError(
            f"cannot get torchvision's {arch.name} ImageNet weights ({' '.join(str(e).split())}); on a machine "
            "without network, put them in the torch cache (TORCH_HOME) or pass --weights PATH, or use "
            "--weights random for a throughput run"
        ) from e


def __getattr__(name: str) -> object:
    """``RECIPE``: torchvision's ``ResNet50_Weights.DEFAULT``, imported only when asked for."""
    if name == "RECIPE":
        from torchvision.models.resnet import ResNet50_Weights  # torchvision whole: only benchmarks ask

        return ResNet50_Weights.DEFAULT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
