"""Build the model a ``ModelSpec`` describes, with its weights, once per worker.

``load_model(spec)`` is what every worker calls (a Ray actor, a Spark Python worker, SageMaker's
``model_fn``), with the spec its driver made once (``inference.describe_model``). A plain
weights string still works (``load_model("random")``): it is described here first, with the
default architecture and no labels or recipe changes.

A torchvision name's weights come from ``inference.weights`` (``imagenet``, ``random`` or a user's
checkpoint), read once per process; a timm, Hugging Face or MLflow model from ``inference.families``,
opened once per process the same way: the driver's description, ``compare`` and packaging each get a fresh
module built from the cached state dict, with no second read or download. A user's file whose
bytes changed since the driver described it is refused. ResNet50 comes from
``inference.resnet``: nothing on its path imports torchvision.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from inference.archs import arch_named
from inference.build import module_with
from inference.errors import WeightsError
from inference.describe import describe_model
from inference.sources import TORCHVISION
from inference.spec import ModelSpec
from inference.weights import weights_for
from preprocess.recipe import Recipe
from storage import redact


@dataclass
class LoadedModel:
    module: nn.Module  # eval mode, on the CPU, this caller's own (move it, cast it, compile it)
    spec: ModelSpec  # what it is: source, architecture, classes, names, recipe, embedding size
    head: str | None  # dotted path of the final nn.Linear (its input is the embedding); None: an embedder

    @property
    def recipe(self) -> Recipe:  # the pixels it expects: resize, crop, mean, std
        return self.spec.recipe


def load_model(model: ModelSpec | str, *, s3_endpoint_url: str | None = None) -> LoadedModel:
    """Build the model ``model`` describes (a ``ModelSpec``, or a ``--weights`` value to describe first).

    Each call returns its own module; the weights behind it are read at most once per process.
    """
    spec = model if isinstance(model, ModelSpec) else describe_model(model, s3_endpoint_url=s3_endpoint_url)
    if spec.kind != TORCHVISION:
        from inference.families import load_network  # torch and the source's library

        network = load_network(spec, s3_endpoint_url)
        return LoadedModel(network.module, spec, network.head)
    checkpoint = weights_for(spec.weights, spec.arch, s3_endpoint_url)
    if spec.weights_sha256 is not None and checkpoint.sha256 != spec.weights_sha256:
        raise WeightsError(f"{redact(spec.weights)} changed after the job checked it (sha256 {checkpoint.sha256[:12]}..., "
                           f"was {spec.weights_sha256[:12]}...); leave the weights in place while a job runs, and run it again")
    arch = arch_named(spec.arch)
    return LoadedModel(module_with(checkpoint.state, arch, redact(spec.weights)), spec, arch.head)


def __getattr__(name: str) -> object:
    """``RECIPE``: torchvision's ``ResNet50_Weights.DEFAULT``, imported only when asked for."""
    if name == "RECIPE":
        from torchvision.models.resnet import ResNet50_Weights  # torchvision whole: only benchmarks ask

        return ResNet50_Weights.DEFAULT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
