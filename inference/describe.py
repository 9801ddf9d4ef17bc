"""``describe_model(weights, model=...)``: the driver's one description of the model, whatever its source.

Call it once, before any work (``job.execution.model_for`` does). The model's source (``inference.sources``) reads
what the model says of itself (a ``Found``: its recipe, class names, head, weights digest); the rest is done here,
once, the same for every source:
- recipe: the options (``recipe_overrides``) over the model's own (``inference.model_recipe``);
- classes: its head measured on images of that recipe's size (a torchvision checkpoint's head as read; a timm, Hugging
  Face or MLflow network run once on two images: ``inference.probe``); a one-logit head is a binary classifier;
- names: ``labels`` (a file) > the model's own > none; an embedder (no head) has none to give.
A torchvision name's ``random`` weights are described without importing torch, so a throughput run's driver never
pays for it; another source's library is imported only then. Every refusal is one ``WeightsError`` line.
"""

from __future__ import annotations

from collections.abc import Mapping

from inference.archs import DEFAULT_ARCH
from inference.errors import WeightsError
from inference.labels import check_names, labels_from_file, names_sha256
from inference.model_recipe import OPTIONS
from inference.scores import head_classes
from inference.source import Found
from inference.sources import TORCHVISION, ModelRef, parse_model, require_library
from inference.spec import ModelSpec
from preprocess.recipe import Recipe
from storage import redact


def describe_model(
    weights: str,
    *,
    model: str | None = None,
    arch: str = DEFAULT_ARCH,
    labels: str | None = None,
    recipe_overrides: Mapping[str, object] | None = None,
    s3_endpoint_url: str | None = None,
) -> ModelSpec:
    """The spec of ``model`` (a ``--model`` source; None: the torchvision ``arch``) with ``weights`` (imagenet,
    random, own, a path or s3:// URI), ``labels`` (a names file) and ``recipe_overrides`` (any recipe fields)."""
    ref = parse_model(model) if model is not None else ModelRef(TORCHVISION, arch)
    require_library(ref)
    found = ref.source.read(ref.name, weights, s3_endpoint_url)
    # The options win over every field of the model's own recipe, and say what its config could not.
    recipe, recipe_source = found.recipe.over(dict(recipe_overrides or {}), OPTIONS).recipe(found.lineage)
    _check_size(found, recipe)
    logits, embedding_dim = found.measure(recipe)
    num_classes, activation = head_classes(logits, found.multi_label) if logits else (0, "softmax")
    names, names_source = _names(found, labels, num_classes, s3_endpoint_url)
    return ModelSpec(kind=ref.kind, weights=weights, arch=found.arch, num_classes=num_classes, activation=activation,
                     recipe=recipe, embedding_dim=embedding_dim, class_names=names, names_source=names_source,
                     names_sha256=None if names is None else names_sha256(names), weights_sha256=found.sha256,
                     source=found.lineage, location=found.location, store=found.store, recipe_source=recipe_source,
                     embedding=found.embedding)


def _check_size(found: Found, recipe: Recipe) -> None:
    if found.input_size is not None and recipe.crop != found.input_size:
        raise WeightsError(f"{found.arch} takes {found.input_size}x{found.input_size} images only (its position "
                           f"embeddings fix the size); the recipe crops {recipe.crop}: set crop to {found.input_size}")


def _names(found: Found, labels: str | None, num_classes: int,
           s3_endpoint_url: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    """The class names and where they came from: ``labels`` > the model's own > none."""
    if num_classes == 0:
        if labels is not None:
            raise WeightsError(f"--labels {redact(labels)}: the model is an embedder, it has no classes to name; "
                               "leave --labels out")
        return None, None
    if labels is not None:
        source = f"labels {redact(labels)}"
        return check_names(labels_from_file(labels, s3_endpoint_url), num_classes, source), source
    if found.names is not None:
        return check_names(found.names, num_classes, found.names_source), found.names_source
    return None, None
