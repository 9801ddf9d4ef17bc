"""Fine-tuned checkpoints as users save them, for tests on every engine.

``fine_tuned_checkpoint(path, num_classes, layout)`` writes a torchvision ResNet50 with a
``num_classes`` head, from seeded weights (BatchNorm statistics and head included, so a loader
that drops any of them gives other answers), in one of ``LAYOUTS``, with optional class names
and recipe beside the state dict. It returns the torchvision module itself: the reference
(plain torchvision, same weights) a test compares the job's answers with.

A random network's pooled features barely differ between images, so a random head gives every
image the same class and a top-1 comparison proves little. The head is therefore fitted to how
features spread over the project's synthetic photos (``job.sample.synthetic``): top-1 then varies from
image to image and logits stay moderate (std about 3), so softmax ties do not blur top-k.

Written with torch and torchvision directly, never with the project's loader, so a test of the
loader reads what a user's training script would have written.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import torch
from torchvision.models import ResNet50_Weights, resnet50

from tests.common.images import photo

# How the state dict sits in the file:
# plain      torch.save(model.state_dict()) (+ metadata keys beside the tensors)
# state_dict {"state_dict": ..., "epoch": ...}: many training scripts
# model      {"model": ..., "optimizer": ..., "args": Namespace}: torchvision's reference scripts
# ddp        torch.save(DistributedDataParallel(model).state_dict()): every key "module."-prefixed
# lightning  a Lightning checkpoint of a LightningModule holding the network as ``self.model``
LAYOUTS = ("plain", "state_dict", "model", "ddp", "lightning")
CALIBRATION_IMAGES = 16  # synthetic photos the head is fitted to
LOGIT_STD = 3.0  # spread of the fitted head's logits over them


def seeded_resnet50(num_classes: int, seed: int = 0) -> torch.nn.Module:
    """torchvision's ResNet50 with a ``num_classes`` head, as if fine-tuned: every tensor seeded, eval mode."""
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = resnet50(num_classes=num_classes)
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, torch.nn.BatchNorm2d):  # trained statistics, not the 0/1 of a fresh module
                layer.running_mean.normal_(0, 0.1, generator=generator)
                layer.running_var.uniform_(0.5, 1.5, generator=generator)
                layer.weight.uniform_(0.5, 1.5, generator=generator)
                layer.bias.normal_(0, 0.1, generator=generator)
    return _fit_head(module.eval(), generator)


def _fit_head(module: torch.nn.Module, generator: torch.Generator) -> torch.nn.Module:
    """A random head over the features' deviation from their mean on synthetic photos, scaled to LOGIT_STD."""
    recipe = ResNet50_Weights.DEFAULT.transforms()
    images = torch.stack([recipe(photo(320, 240, seed=1000 + i)) for i in range(CALIBRATION_IMAGES)])
    with torch.no_grad():
        features = _pooled(module, images)  # (CALIBRATION_IMAGES, 2048)
        mean = features.mean(0)
        weight = torch.randn(module.fc.out_features, features.shape[1], generator=generator)
        weight *= LOGIT_STD / ((features - mean) @ weight.T).std()
        module.fc.weight.copy_(weight)
        module.fc.bias.copy_(-weight @ mean)
    return module


def _pooled(module: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    fc, module.fc = module.fc, torch.nn.Identity()
    try:
        return module(images)
    finally:
        module.fc = fc


def write_checkpoint(
    path: Path,
    state: dict[str, torch.Tensor],
    layout: str = "plain",
    *,
    class_names: Sequence[str] | None = None,
    recipe: dict | None = None,
) -> Path:
    """Save ``state`` at ``path`` in ``layout``, with ``class_names``/``recipe`` beside it when given."""
    metadata = {key: value for key, value in (("class_names", list(class_names) if class_names else None),
                                               ("recipe", recipe)) if value is not None}
    if layout == "plain":
        saved = {**state, **metadata}
    elif layout == "state_dict":
        saved = {"state_dict": state, "epoch": 7, **metadata}
    elif layout == "model":
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1, momentum=0.9)
        saved = {"model": state, "optimizer": optimizer.state_dict(), "epoch": 7,
                 "args": argparse.Namespace(model="resnet50", lr=0.1), **metadata}
    elif layout == "ddp":
        saved = {**{f"module.{key}": value for key, value in state.items()}, **metadata}
    elif layout == "lightning":
        saved = {"state_dict": {f"model.{key}": value for key, value in state.items()}, "epoch": 7, "global_step": 700,
                 "pytorch-lightning_version": "2.4.0", "hyper_parameters": {"lr": 0.1}, **metadata}
    else:
        raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")
    torch.save(saved, path)
    return path


def fine_tuned_checkpoint(
    path: Path,
    num_classes: int,
    layout: str = "ddp",
    *,
    class_names: Sequence[str] | None = None,
    recipe: dict | None = None,
    seed: int = 0,
) -> torch.nn.Module:
    """Write a seeded ``num_classes``-class ResNet50 checkpoint at ``path``; return the torchvision module."""
    module = seeded_resnet50(num_classes, seed)
    write_checkpoint(path, module.state_dict(), layout, class_names=class_names, recipe=recipe)
    return module
