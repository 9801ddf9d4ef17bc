"""timm, Hugging Face and MLflow models: opened once per process, described once on the driver.

Each source's module (``inference.timm_models``, ``hf_models``, ``mlflow_models``; the table
``FAMILIES``) does two things: ``locate(name)`` pins what ``--model`` names (an MLflow alias to
its version; the driver only), and ``open_network(location, weights, ...)`` builds the network
with its weights, as an ``inference.network.Network``: the module, where its final Linear is, and
what the source says of itself (recipe, class names, weights digest). ``describe_source`` turns that into the
``ModelSpec`` every worker gets; a worker's ``inference.load_model`` opens the same location (read
once per process, ``network_for``) and refuses weights whose digest changed since the driver's.

Before the spec is made the driver runs the network once on two images of the recipe's size
(``_probe``): a model that refuses that size, a head that is not its last step, or an output that
is not a vector is one ``WeightsError`` line before any image is read, not a failed batch.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from types import ModuleType

import torch

from inference.errors import WeightsError
from inference.features import FeaturesAndLogits
from inference.labels import check_names, labels_from_file, names_sha256
from inference.model_recipe import OPTIONS
from inference.network import Network
from inference.scores import head_classes
from inference.sources import ModelSource, require_library
from inference.spec import ModelSpec
from preprocess.recipe import Recipe
from storage import redact

PROBE_IMAGES = 2  # a batch of two: a network that only runs one image at a time is refused here


def _timm() -> ModuleType:
    from inference import timm_models

    return timm_models


def _hf() -> ModuleType:
    from inference import hf_models

    return hf_models


def _mlflow() -> ModuleType:
    from inference import mlflow_models

    return mlflow_models


# Imported by statement inside each function (the SageMaker archive ships what its handler imports, read from them).
FAMILIES: dict[str, Callable[[], ModuleType]] = {"timm": _timm, "hf": _hf, "mlflow": _mlflow}


@functools.lru_cache(maxsize=2)
def network_for(kind: str, location: str, weights: str, s3_endpoint_url: str | None,
                store: tuple[str, ...] | None) -> Network:
    """The network at ``location`` with ``weights``, opened once per process (the driver's description, then its
    own workers, reuse it); callers take a copy (``load_network``)."""
    return FAMILIES[kind]().open_network(location, weights, s3_endpoint_url, store)


def load_network(spec: ModelSpec, s3_endpoint_url: str | None) -> Network:
    """A copy of the network ``spec`` describes, this caller's own; refused if its weights changed since the driver's."""
    network = network_for(spec.kind, spec.location, spec.weights, s3_endpoint_url, spec.store)
    if spec.weights_sha256 is not None and network.sha256 != spec.weights_sha256:
        raise WeightsError(f"{redact(spec.source)}: its weights changed after the job checked them (sha256 "
                           f"{(network.sha256 or 'none')[:12]}..., was {spec.weights_sha256[:12]}...); leave the model "
                           "in place while a job runs, and run it again")
    return Network(**{**network.__dict__, "module": copy.deepcopy(network.module)})


def local_folder(spec: ModelSpec, s3_endpoint_url: str | None) -> str | None:
    """A local folder holding a folder source's files (an HF folder, an MLflow model), e.g. to ship them; None: the
    source is a name and a weights file (timm)."""
    return FAMILIES[spec.kind]().local_folder(spec.location, spec.weights, s3_endpoint_url, spec.store)


def describe_source(model: ModelSource, weights: str, labels: str | None, overrides: Mapping[str, object] | None,
                    s3_endpoint_url: str | None) -> ModelSpec:
    """The spec of a timm, Hugging Face or MLflow model: opened here once, its recipe, names and sizes checked."""
    require_library(model)
    family = FAMILIES[model.kind]()
    located = family.locate(model.name, s3_endpoint_url)
    network = network_for(model.kind, located.location, weights, s3_endpoint_url, located.store)
    # The options win over every field of the model's own recipe, and say what its config could not.
    recipe, recipe_source = network.recipe.over(dict(overrides or {}), OPTIONS).recipe(located.source)
    logits, embedding_dim = _probe(network, recipe, located.source)
    num_classes, activation = head_classes(logits, network.multi_label) if logits else (0, "softmax")
    names, names_source = _names(network, labels, num_classes, s3_endpoint_url)
    return ModelSpec(weights=weights, arch=network.arch, num_classes=num_classes, activation=activation, recipe=recipe,
                     embedding_dim=embedding_dim, class_names=names, names_source=names_source,
                     names_sha256=None if names is None else names_sha256(names), weights_sha256=network.sha256,
                     source=located.source, location=located.location, store=located.store,
                     recipe_source=recipe_source, embedding=network.embedding)


def _names(network: Network, labels: str | None, num_classes: int,
           s3_endpoint_url: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    if num_classes == 0:
        if labels is not None:
            raise WeightsError(f"--labels {redact(labels)}: the model is an embedder, it has no classes to name; "
                               "leave --labels out")
        return None, None
    if labels is not None:
        source = f"labels {redact(labels)}"
        return check_names(labels_from_file(labels, s3_endpoint_url), num_classes, source), source
    if network.names is not None:
        return check_names(network.names, num_classes, network.names_source), network.names_source
    return None, None


def _probe(network: Network, recipe: Recipe, shown: str) -> tuple[int, int]:
    """(logits, embedding size) of the network on images of the recipe's size; WeightsError for what will not run."""
    generator = torch.Generator().manual_seed(0)
    images = torch.rand((PROBE_IMAGES, 3, recipe.crop, recipe.crop), generator=generator) * 2 - 1  # (N, 3, H, W)
    outputs = FeaturesAndLogits(network.module, network.head, predictions=network.head is not None)
    try:
        with torch.inference_mode():
            features, logits = outputs(images)
            whole = network.module(images) if network.head is not None else None
    except Exception as e:  # a model raises what it raises (RuntimeError, ValueError, AssertionError...) for a size it refuses
        why = " ".join(str(e).split())[:300]
        raise WeightsError(f"{shown} does not run on {recipe.crop}x{recipe.crop} images ({type(e).__name__}: {why}); "
                           f"pass --crop (and --resize) of the size it takes") from e
    if features.ndim != 2 or features.shape[0] != PROBE_IMAGES:
        raise WeightsError(f"{shown}: its embedding has shape {tuple(features.shape)} for {PROBE_IMAGES} images, not "
                           "(images, size): it does not end in a pooled vector")
    if whole is not None and (whole.shape != logits.shape or not torch.allclose(whole, logits, rtol=1e-4, atol=1e-4)):
        raise WeightsError(f"{shown}: {network.head} is not the network's last step (its output differs from the "
                           "network's); the model must end in the Linear that gives its logits")
    return (0 if logits is None else logits.shape[1]), features.shape[1]
