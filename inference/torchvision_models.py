"""``--model NAME``: a torchvision classifier (``inference.archs``) with ``--weights`` imagenet, random or a checkpoint.

Use it through its row of ``inference.sources`` (``read`` on the driver, ``open_model`` on a worker). What it reads:
- classes: the checkpoint's head size (``imagenet`` and ``random``: 1,000); a one-logit head is a binary classifier,
  two classes scored by sigmoid (``inference.scores``);
- names: the checkpoint's ``class_names``/``classes``, else torchvision's ImageNet names for ``imagenet``, else none
  (``random``, a checkpoint without names); ``--labels`` wins over them (``inference.describe``);
- recipe: the checkpoint's ``recipe`` over the architecture's torchvision default (``inference.archs``; ResNet50:
  ``IMAGENET_RECIPE``), a whole recipe, so each layer over it is checked and named alone (``inference.model_recipe``).
``random`` weights are read without importing torch, so a throughput run's driver never pays for it; a worker's
weights are read once per process (``inference.weights``) and refused when their bytes changed since the driver's.
"""

from __future__ import annotations

from inference.archs import ARCHS, Arch, arch_named
from inference.errors import WeightsError
from inference.labels import imagenet_names
from inference.model_recipe import RecipeDraft
from inference.source import Found, Opened
from inference.spec import ModelSpec
from inference.weights import IMAGENET_WEIGHTS, RANDOM_WEIGHTS, weights_for
from storage import redact

IMAGENET_CLASSES = 1000  # the head of ``imagenet`` and ``random`` weights
IMAGENET_NAMES_SOURCE = "torchvision ImageNet categories"


def parse(text: str) -> str | None:
    """``text`` when it names a torchvision classifier."""
    return text if text in ARCHS else None


def read(name: str, weights: str, s3_endpoint_url: str | None) -> Found:
    """The classifier ``name`` with ``weights``: its head, names and recipe (the checkpoint's, read once a process)."""
    arch = arch_named(name)
    logits, names, saved_recipe, sha256 = IMAGENET_CLASSES, None, None, None
    if weights != RANDOM_WEIGHTS:  # imagenet too: weights that cannot be had are refused here, before any work
        logits, names, saved_recipe, sha256 = _checkpoint(weights, arch, s3_endpoint_url)
    names_source = None if names is None else f"checkpoint {redact(weights)}"
    if names is None and weights == IMAGENET_WEIGHTS:
        names, names_source = imagenet_names(), IMAGENET_NAMES_SOURCE
    recipe = RecipeDraft.whole(arch.recipe, f"torchvision's {arch.name} DEFAULT weights")
    if saved_recipe is not None:
        recipe = recipe.over(saved_recipe, redact(weights))
    return Found(arch.name, arch.name, recipe, measure=lambda _: (logits, arch.embedding_dim),  # no network built here
                 names=names, names_source=names_source, sha256=sha256, input_size=arch.input_size)


def open_model(spec: ModelSpec, s3_endpoint_url: str | None) -> Opened:
    """The classifier ``spec`` describes, holding its own copy of the weights read once per process."""
    from inference.build import module_with  # torch: from the first network on

    checkpoint = weights_for(spec.weights, spec.arch, s3_endpoint_url)
    if spec.weights_sha256 is not None and checkpoint.sha256 != spec.weights_sha256:
        raise WeightsError(f"{redact(spec.weights)} changed after the job checked it (sha256 {checkpoint.sha256[:12]}..., "
                           f"was {spec.weights_sha256[:12]}...); leave the weights in place while a job runs, and run it again")
    arch = arch_named(spec.arch)
    return Opened(module_with(checkpoint.state, arch, redact(spec.weights)), arch.head)


def no_folder(spec: ModelSpec, s3_endpoint_url: str | None) -> None:
    """None: a name and a weights file, not a folder (a SageMaker archive carries the weights as model.pth)."""
    return None


def _checkpoint(weights: str, arch: Arch, s3_endpoint_url: str | None) -> tuple[int, object, object, str | None]:
    """(the head's logits, saved names, saved recipe, sha256) of weights that are not ``random``: torch from here."""
    from inference.build import check_fits

    checkpoint = weights_for(weights, arch.name, s3_endpoint_url)
    if weights == IMAGENET_WEIGHTS:
        return IMAGENET_CLASSES, None, None, None
    logits = check_fits(checkpoint.state, arch, redact(weights))
    return logits, checkpoint.class_names, checkpoint.recipe, checkpoint.sha256
