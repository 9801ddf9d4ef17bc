"""Where a model comes from: ``--model SOURCE``, read by its prefix from one table. Torch-free.

- a torchvision classifier's name (``resnet50``, ``convnext_tiny``: ``inference.archs``; ``--arch`` is its old name);
- ``timm:NAME``: ``timm.create_model(NAME, pretrained=False)``, its weights from ``--weights`` (``inference.timm_models``);
- ``hf:PATH``: a Hugging Face folder, local or ``s3://``, written by ``save_pretrained`` (``inference.hf_models``);
- ``models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``runs:/RUN/PATH``: an MLflow PyTorch model (``inference.mlflow_models``).

Use ``parse_model`` wherever a ``--model`` value is checked (the config, before any work) and
``require_library`` before a source's library is imported: a missing extra is one line naming
the ``pip install``. ``weights_for_source`` says which ``--weights`` each source takes.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from inference.archs import ARCHS
from inference.errors import WeightsError
from inference.weights import IMAGENET_WEIGHTS, RANDOM_WEIGHTS

TORCHVISION = "torchvision"
# --weights own: the weights the source holds itself (an HF folder's model.safetensors, an MLflow model's data).
OWN_WEIGHTS = "own"
PACKAGE = "streaming-batch-inference"


@dataclass(frozen=True)
class Source:
    kind: str  # torchvision | timm | hf | mlflow: the module that builds it
    prefix: str  # how --model spells it; "" for a torchvision name
    lineage: str  # how the model lineage column and the manifest name it: "timm:", "hf:", "mlflow:"
    extra: str | None  # the pip extra that brings its library
    modules: tuple[str, ...]  # what that extra provides, as import names (checked before any import)
    own_weights: bool  # it holds its weights (--weights own, the default), or they come from --weights
    form: str  # the --model form, for messages


SOURCES = (
    Source("timm", "timm:", "timm:", "timm", ("timm", "safetensors"), False, "timm:NAME"),
    Source("hf", "hf:", "hf:", "hf", ("transformers", "safetensors"), True, "hf:PATH"),
    Source("mlflow", "models:/", "mlflow:", "mlflow", ("mlflow",), True, "models:/NAME/VERSION or models:/NAME@ALIAS"),
    Source("mlflow", "runs:/", "mlflow:", "mlflow", ("mlflow",), True, "runs:/RUN/PATH"),
)
TORCHVISION_SOURCE = Source(TORCHVISION, "", "", None, (), False, "a torchvision name")
FORMS = f"a torchvision name ({', '.join(list(ARCHS)[:3])}, ...), " + ", ".join(source.form for source in SOURCES)


@dataclass(frozen=True)
class ModelSource:
    source: Source
    name: str  # after the prefix: timm's model name, the HF folder; the whole URI for MLflow; a torchvision name

    @property
    def kind(self) -> str:
        return self.source.kind

    @property
    def given(self) -> str:
        """As --model spells it."""
        return self.name if self.kind in (TORCHVISION, "mlflow") else self.source.prefix + self.name


def parse_model(text: str) -> ModelSource:
    """``--model``'s value as a source and a name; ``WeightsError`` naming the forms for anything else."""
    for source in SOURCES:
        if text.startswith(source.prefix):
            name = text if source.kind == "mlflow" else text[len(source.prefix):]
            if not name.strip("/") or name == source.prefix:
                raise WeightsError(f"--model {text}: {source.form} names nothing after {source.prefix!r}")
            return ModelSource(source, name)
    if text in ARCHS:
        return ModelSource(TORCHVISION_SOURCE, text)
    raise WeightsError(f"--model {text}: not a model source; pass {FORMS}")


def require_library(model: ModelSource) -> None:
    """One line naming the ``pip install`` when the source's extra is not installed here."""
    missing = next((m for m in model.source.modules if importlib.util.find_spec(m) is None), None)
    if missing is not None:
        extra = model.source.extra
        raise WeightsError(f"--model {model.given} needs {missing!r}, which the [{extra}] extra brings: "
                           f"pip install '{PACKAGE}[{extra}]'")


def weights_for_source(model: ModelSource, weights: str | None, sample: bool) -> str:
    """The ``--weights`` a job with ``model`` uses (``weights`` as given; None: the source's default), or
    ``WeightsError`` for weights the source does not take. ``sample``: the built-in sample, random by default."""
    if weights is None:
        if sample:
            return RANDOM_WEIGHTS
        if model.source.own_weights:
            return OWN_WEIGHTS
        if model.kind == "timm":
            raise WeightsError(f"--model {model.given} needs --weights: a timm checkpoint (model.safetensors or "
                               "pytorch_model.bin, a path or s3:// URI), or random; timm's pretrained weights are "
                               "never downloaded at run time")
        return IMAGENET_WEIGHTS
    if model.source.own_weights and weights not in (OWN_WEIGHTS, RANDOM_WEIGHTS):
        raise WeightsError(f"--weights {weights}: --model {model.given} holds its own weights; leave --weights out "
                           f"(or pass {OWN_WEIGHTS}), or pass {RANDOM_WEIGHTS}")
    if not model.source.own_weights and weights == OWN_WEIGHTS:
        raise WeightsError(f"--weights {OWN_WEIGHTS}: --model {model.given} holds no weights of its own; pass a checkpoint "
                           f"or {RANDOM_WEIGHTS}")
    if model.kind == "timm" and weights == IMAGENET_WEIGHTS:
        raise WeightsError(f"--weights {IMAGENET_WEIGHTS} names torchvision's weights; for --model {model.given} pass a "
                           "timm checkpoint file (timm's own pretrained weights are never downloaded at run time), or random")
    return weights


def kind_of(source: str) -> str:
    """Which source built a model its lineage names ``source`` (``timm:convnext_tiny`` -> timm; ``resnet50`` -> torchvision)."""
    return next((s.kind for s in SOURCES if source.startswith(s.lineage)), TORCHVISION)
