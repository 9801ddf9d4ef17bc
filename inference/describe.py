"""``describe_model(weights, model=...)``: the driver's one description of the model, whatever its source.

Call it once, before any work (``job.execution.model_for`` does): a torchvision name is described by
``inference.spec.describe_torchvision`` (torch-free for ``random`` weights, so a throughput run's
driver never imports torch); ``timm:``, ``hf:`` and MLflow sources by ``inference.families``, which
imports torch and the source's library only then. Every refusal is one ``WeightsError`` line.
"""

from __future__ import annotations

from collections.abc import Mapping

from inference.archs import DEFAULT_ARCH
from inference.sources import TORCHVISION, parse_model
from inference.spec import ModelSpec, describe_torchvision


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
    source = parse_model(model) if model is not None else None
    if source is None or source.kind == TORCHVISION:
        return describe_torchvision(weights, arch=arch if source is None else source.name, labels=labels, recipe_overrides=recipe_overrides,
                                    s3_endpoint_url=s3_endpoint_url)
    from inference.families import describe_source  # torch and the source's library: only when asked for

    return describe_source(source, weights, labels, recipe_overrides, s3_endpoint_url)
