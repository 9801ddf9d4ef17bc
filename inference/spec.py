"""What model a job runs, decided once by the driver: ``ModelSpec``, and the torchvision names' description.

The driver calls ``inference.describe_model`` before any work; every refusal (weights that cannot be read
or do not fit the network, names that are missing, repeated or miscounted, a bad recipe, a source
that does not resolve) is one ``WeightsError`` line. The ``ModelSpec`` it returns is frozen,
picklable and torch-free: ship it to every worker, which calls ``inference.load_model(spec)``;
record ``spec.to_dict()`` in the manifest and part footers (``--resume`` compares them).

A torchvision name is described here (``describe_torchvision``); timm, Hugging Face and MLflow
models by ``inference.families``, which opens them once on the driver. Rules for a torchvision name:
- classes: the checkpoint's head size (``imagenet`` and ``random``: 1,000); a one-logit head is a
  binary classifier, two classes scored by sigmoid (``inference.scores``);
- names: ``labels`` (a file) > the checkpoint's ``class_names``/``classes`` > torchvision's
  ImageNet names for ``imagenet`` > none (``random``, or a checkpoint without names);
- recipe: ``recipe_overrides`` > the checkpoint's ``recipe`` > the architecture's torchvision
  default (``inference.archs``; ResNet50: ``IMAGENET_RECIPE``), each a subset of the recipe's fields.
``random`` weights of a torchvision name are described without importing torch, so a throughput
run's driver never pays for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from inference.archs import DEFAULT_ARCH, Arch, arch_named
from inference.errors import WeightsError
from inference.labels import check_names, imagenet_names, labels_from_file, names_sha256
from inference.model_recipe import OPTIONS, layered_recipe
from inference.scores import ACTIVATIONS, BINARY_CLASSES, Activation, head_classes
from inference.sources import kind_of
from inference.weights import IMAGENET_WEIGHTS, RANDOM_WEIGHTS, weights_for
from preprocess.recipe import Recipe
from storage import redact

IMAGENET_CLASSES = 1000  # the head of ``imagenet`` and ``random`` weights
IMAGENET_NAMES_SOURCE = "torchvision ImageNet categories"
POOLED = "the pooled feature: the final Linear's input"  # a classifier's embedding, whatever its source


@dataclass(frozen=True)
class ModelSpec:
    weights: str  # --weights as given: imagenet, random, or the path / s3:// URI workers read again
    arch: str  # a name in inference.archs.ARCHS
    num_classes: int  # one score per class: the head's size, 2 for a one-logit (binary) head
    recipe: Recipe  # the pixels the model expects: resize, crop, mean, std
    embedding_dim: int  # length of the pooled feature (the head's input): ResNet50 2048
    # logits -> scores (inference.scores): softmax; sigmoid for a one-logit head; multi_label: each class's sigmoid
    activation: Activation = "softmax"
    class_names: tuple[str, ...] | None = None  # by class index; None: no names known (label_name null)
    names_source: str | None = None  # "labels <uri>", "checkpoint <uri>" or IMAGENET_NAMES_SOURCE
    names_sha256: str | None = None  # inference.labels.names_sha256: the names' identity, for --resume
    weights_sha256: str | None = None  # a user checkpoint's bytes: workers refuse a file changed under them
    # How the lineage column and the manifest name the model: resnet50, timm:convnext_tiny, hf:s3://b/vit,
    # mlflow:models:/pets/3 (an alias resolved to its version); None: ``arch`` (a torchvision name).
    source: str | None = None
    location: str | None = None  # what a worker opens: timm's model name, the HF folder, the pinned MLflow URI
    store: tuple[str, ...] | None = None  # MLflow: (tracking URI, registry URI) it was resolved in; workers read it there
    recipe_source: str | None = None  # where each part of the recipe came from (the model's config, a checkpoint, options)
    embedding: str = POOLED  # what the embedding column holds

    def __post_init__(self) -> None:
        if self.source is None:
            object.__setattr__(self, "source", self.arch)  # frozen: this is construction, not a change
        if isinstance(self.store, list):  # read back from JSON
            object.__setattr__(self, "store", tuple(self.store))
        if self.num_classes < 0:
            raise WeightsError(f"a model has 0 classes (an embedder) or more, not {self.num_classes}")
        if self.activation not in ACTIVATIONS:
            raise WeightsError(f"activation {self.activation!r}: choose one of {', '.join(ACTIVATIONS)}")
        if self.activation == "sigmoid" and self.num_classes != BINARY_CLASSES:
            raise WeightsError(f"a sigmoid head scores {BINARY_CLASSES} classes, not {self.num_classes}; "
                               "describe the model with describe_model")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (lists, not tuples), for the manifest, part footers and a SageMaker archive.

        Credentials in ``weights`` are redacted: ``from_dict`` of it can describe, not re-read, such a URI.
        """
        record = asdict(self)
        record.update(weights=redact(self.weights), recipe=self.recipe.to_dict(), source=redact(self.source),
                      location=None if self.location is None else redact(self.location),
                      class_names=None if self.class_names is None else list(self.class_names))
        return record

    @property
    def kind(self) -> str:
        """Which source builds it: torchvision, timm, hf or mlflow (``inference.sources``)."""
        return kind_of(self.source)

    @property
    def embedder(self) -> bool:
        """No classes: a CLIP, SigLIP or DINOv2 tower (or a headless checkpoint), embeddings only."""
        return self.num_classes == 0

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ModelSpec:
        """The spec ``to_dict`` wrote (a SageMaker handler reading its archive, a test)."""
        names = record.get("class_names")
        try:
            recipe = Recipe().updated(record["recipe"], "the model description's recipe")
            return cls(**{**record, "recipe": recipe, "class_names": None if names is None else tuple(names)})
        except (KeyError, TypeError, ValueError) as e:
            raise WeightsError(f"not a model description ({e}); write it with ModelSpec.to_dict") from e


def describe_torchvision(
    weights: str,
    *,
    arch: str = DEFAULT_ARCH,
    labels: str | None = None,
    recipe_overrides: Mapping[str, object] | None = None,
    s3_endpoint_url: str | None = None,
) -> ModelSpec:
    """Resolve ``weights`` (imagenet, random, a path or s3:// URI) of the torchvision ``arch`` into the spec every
    worker uses (``inference.describe.describe_model`` sends every other source elsewhere).

    ``labels``: a names file (path or s3://); ``recipe_overrides``: any of the recipe's fields.
    Reads the checkpoint (cached for this process's own ``load_model``); WeightsError when unusable.
    """
    chosen = arch_named(arch)
    logits, saved_names, saved_recipe, sha256 = IMAGENET_CLASSES, None, None, None
    if weights != RANDOM_WEIGHTS:
        logits, saved_names, saved_recipe, sha256 = _read(weights, chosen, s3_endpoint_url)
    num_classes, activation = head_classes(logits)
    names, names_source = _names(weights, labels, saved_names, num_classes, s3_endpoint_url)
    recipe, recipe_source = _recipe(chosen, saved_recipe, recipe_overrides, redact(weights))
    return ModelSpec(
        weights=weights, arch=chosen.name, num_classes=num_classes, activation=activation,
        recipe=recipe, recipe_source=recipe_source, embedding_dim=chosen.embedding_dim,
        class_names=names, names_source=names_source, names_sha256=None if names is None else names_sha256(names),
        weights_sha256=sha256,
    )


def _read(weights: str, arch: Arch, s3_endpoint_url: str | None) -> tuple[int, object, object, str | None]:
    """(the head's logits, saved names, saved recipe, sha256) of weights that are not ``random``: torch from here."""
    from inference.build import check_fits

    checkpoint = weights_for(weights, arch.name, s3_endpoint_url)
    if weights == IMAGENET_WEIGHTS:
        return IMAGENET_CLASSES, None, None, None
    logits = check_fits(checkpoint.state, arch, redact(weights))
    return logits, checkpoint.class_names, checkpoint.recipe, checkpoint.sha256


def _names(weights: str, labels: str | None, saved: object, num_classes: int,
           s3_endpoint_url: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    if labels is not None:
        source = f"labels {redact(labels)}"
        return check_names(labels_from_file(labels, s3_endpoint_url), num_classes, source), source
    if saved is not None:
        source = f"checkpoint {redact(weights)}"
        return check_names(saved, num_classes, source), source
    if weights == IMAGENET_WEIGHTS:
        return check_names(imagenet_names(), num_classes, IMAGENET_NAMES_SOURCE), IMAGENET_NAMES_SOURCE
    return None, None


def _recipe(arch: Arch, saved: object, overrides: Mapping[str, object] | None, shown: str) -> tuple[Recipe, str]:
    """The recipe and where it came from: the options over the checkpoint's over the architecture's torchvision one."""
    if saved is not None and not isinstance(saved, Mapping):
        raise WeightsError(f"{shown}: its recipe must be a dict of the recipe's fields, found {saved!r}")
    layers = [(saved or {}, shown), (overrides or {}, OPTIONS)]
    recipe, source = layered_recipe(arch.recipe, f"torchvision's {arch.name} DEFAULT weights", layers)
    if arch.input_size is not None and recipe.crop != arch.input_size:
        raise WeightsError(f"{arch.name} takes {arch.input_size}x{arch.input_size} images only (its position "
                           f"embeddings fix the size); the recipe crops {recipe.crop}: set crop to {arch.input_size}")
    return recipe, source
