"""The driver's one run of a network before any work: what its head and embedding are, on images of the recipe's size.

A timm, Hugging Face or MLflow network is measured here (``inference.network.read_network`` hands ``probe`` over as
its ``Found.measure``), once the options have made its recipe: two images of that size go through it, so a model
that refuses the size, a head that is not its last step, or an output that is not a vector is one ``WeightsError``
line before any image is read, not a failed batch.
"""

from __future__ import annotations

import torch
from torch import nn

from inference.errors import WeightsError
from inference.features import FeaturesAndLogits
from preprocess.recipe import Recipe

PROBE_IMAGES = 2  # a batch of two: a network that only runs one image at a time is refused here


def probe(module: nn.Module, head: str | None, shown: str, recipe: Recipe) -> tuple[int, int]:
    """(logits, embedding size) of ``module`` (its final Linear at ``head``; None: an embedder) on images of the
    recipe's size; WeightsError for what will not run."""
    generator = torch.Generator().manual_seed(0)
    images = torch.rand((PROBE_IMAGES, 3, recipe.crop, recipe.crop), generator=generator) * 2 - 1  # (N, 3, H, W)
    outputs = FeaturesAndLogits(module, head, predictions=head is not None)
    try:
        with torch.inference_mode():
            features, logits = outputs(images)
            whole = module(images) if head is not None else None
    except Exception as e:  # a model raises what it raises (RuntimeError, ValueError, AssertionError...) for a size it refuses
        why = " ".join(str(e).split())[:300]
        raise WeightsError(f"{shown} does not run on {recipe.crop}x{recipe.crop} images ({type(e).__name__}: {why}); "
                           f"pass --crop (and --resize) of the size it takes") from e
    if features.ndim != 2 or features.shape[0] != PROBE_IMAGES:
        raise WeightsError(f"{shown}: its embedding has shape {tuple(features.shape)} for {PROBE_IMAGES} images, not "
                           "(images, size): it does not end in a pooled vector")
    if whole is not None and (whole.shape != logits.shape or not torch.allclose(whole, logits, rtol=1e-4, atol=1e-4)):
        raise WeightsError(f"{shown}: {head} is not the network's last step (its output differs from the "
                           "network's); the model must end in the Linear that gives its logits")
    return (0 if logits is None else logits.shape[1]), features.shape[1]
