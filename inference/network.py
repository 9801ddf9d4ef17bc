"""What a timm, Hugging Face or MLflow source hands over: a ``Network`` (and where it lies: ``Located``).

Plain data, so each source's module (``inference.timm_models``, ``hf_models``, ``mlflow_models``)
and ``inference.families``, which describes and loads them, share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from inference.model_recipe import RecipeDraft
from inference.spec import POOLED


@dataclass
class Network:
    """A model as a source hands it over: eval mode, fp32, on the CPU."""

    module: nn.Module  # module(x) -> logits (N, C) of its final Linear; or the embedding (N, D) when head is None
    head: str | None  # dotted path of that final nn.Linear (its input is the embedding); None: an embedder
    arch: str  # the network within its source: timm's name, the HF architecture, the MLflow module's class
    sha256: str | None  # the weights' bytes (a checkpoint, model.safetensors, the MLflow model's data); None: random
    recipe: RecipeDraft  # the source's own eval recipe: what its config says, and what it cannot say (the options must)
    names: Sequence[str] | None = None  # class names the model carries (timm's label info, id2label, logged names)
    names_source: str | None = None
    embedding: str = POOLED  # what the embedding column holds
    multi_label: bool = False  # a head of independent yes/no classes, scored by each class's sigmoid (inference.scores)


@dataclass(frozen=True)
class Located:
    source: str  # the lineage's name: timm:convnext_atto, hf:<folder>, mlflow:models:/pets/3
    location: str  # what open_network opens
    store: tuple[str, ...] | None = None  # MLflow: (tracking URI, registry URI)
