"""What model a job runs, decided once by the driver: ``ModelSpec``. Torch-free.

The driver makes it with ``inference.describe_model`` before any work; every refusal (weights that cannot be read
or do not fit the network, names that are missing, repeated or miscounted, a bad recipe, a source that does not
resolve) is one ``WeightsError`` line there. A spec is frozen and picklable: ship it to every worker, which calls
``inference.load_model(spec)`` (the source its ``kind`` names opens it: ``inference.sources``); record
``spec.to_dict()`` in the manifest and part footers (``--resume`` compares what ``job.output.parts`` takes of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from inference.errors import WeightsError
from inference.scores import ACTIVATIONS, BINARY_CLASSES, Activation
from preprocess.recipe import Recipe
from storage import redact

POOLED = "the pooled feature: the final Linear's input"  # a classifier's embedding, whatever its source


@dataclass(frozen=True)
class ModelSpec:
    kind: str  # which source builds it, its key in inference.sources.SOURCES: torchvision | timm | hf | mlflow
    weights: str  # --weights as given: imagenet, random, own, or the path / s3:// URI workers read again
    arch: str  # the network within its source: a torchvision name (inference.archs.ARCHS), timm's name, the HF class
    num_classes: int  # one score per class: the head's size, 2 for a one-logit (binary) head
    recipe: Recipe  # the pixels the model expects: resize, crop, mean, std
    embedding_dim: int  # length of the pooled feature (the head's input): ResNet50 2048
    # logits -> scores (inference.scores): softmax; sigmoid for a one-logit head; multi_label: each class's sigmoid
    activation: Activation = "softmax"
    class_names: tuple[str, ...] | None = None  # by class index; None: no names known (label_name null)
    names_source: str | None = None  # "labels <uri>", "checkpoint <uri>", "torchvision ImageNet categories"...
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
