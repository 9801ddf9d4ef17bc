"""Build the model a ``ModelSpec`` describes, with its weights, once per worker.

``load_model(spec)`` is what every worker calls (a Ray actor, a Spark Python worker, SageMaker's
``model_fn``), with the spec its driver made once (``inference.describe_model``). A plain
weights string still works (``load_model("random")``): it is described here first, with the
default architecture and no labels or recipe changes.

The source the spec's ``kind`` names (``inference.sources``) opens it: a torchvision name's weights come from
``inference.weights`` (``imagenet``, ``random`` or a user's checkpoint), a timm, Hugging Face or MLflow network from
``inference.network``, each read once per process: the driver's description, ``compare`` and packaging each get a
fresh module, with no second read or download. A user's file whose bytes changed since the driver described it is
refused. ResNet50 comes from ``inference.resnet``: nothing on its path imports torchvision.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from inference.describe import describe_model
from inference.sources import source_of
from inference.spec import ModelSpec
from preprocess.recipe import Recipe


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
    opened = source_of(spec.kind).open(spec, s3_endpoint_url)
    return LoadedModel(opened.module, spec, opened.head)


def __getattr__(name: str) -> object:
    """``RECIPE``: torchvision's ``ResNet50_Weights.DEFAULT``, imported only when asked for."""
    if name == "RECIPE":
        from torchvision.models.resnet import ResNet50_Weights  # torchvision whole: only benchmarks ask

        return ResNet50_Weights.DEFAULT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
