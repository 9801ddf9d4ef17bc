"""Where a model comes from: ``--model SOURCE``, read by ``SOURCES``, the one table of sources. Torch-free.

- a torchvision classifier's name (``resnet50``, ``convnext_tiny``: ``inference.archs``; ``--arch`` is its old name):
  ``inference.torchvision_models``;
- ``timm:NAME``: ``timm.create_model(NAME, pretrained=False)``, its weights from ``--weights``
  (``inference.timm_models``);
- ``hf:PATH``: a Hugging Face folder, local or ``s3://``, written by ``save_pretrained`` (``inference.hf_models``);
- ``models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``runs:/RUN/PATH``: an MLflow PyTorch model
  (``inference.mlflow_models``).

Each is a ``Source`` (``inference.source``, the contract) and one row here: how ``--model`` spells it, which
``--weights`` it takes, its extra, and the functions that read and open its models. Whatever asks which source a
model is asks this table: ``parse_model`` for a ``--model`` value (the config, before any work), ``source_of`` for
a described model's ``ModelSpec.kind`` (a worker's ``load_model``, a SageMaker archive). A fifth source is one row.
A source's library is imported only when one of its functions runs: ``require_library`` first, so a missing extra
is one line naming the ``pip install``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from inference import torchvision_models
from inference.archs import ARCHS
from inference.errors import WeightsError
from inference.network import NetworkCode, load_network, local_folder, read_network
from inference.source import Source, WeightsRule, name_after
from inference.weights import IMAGENET_WEIGHTS, OWN_WEIGHTS, RANDOM_WEIGHTS
from storage import normalise

TIMM_FORM, HF_FORM = "timm:NAME", "hf:PATH"
MODELS_FORM, RUNS_FORM = "models:/NAME/VERSION or models:/NAME@ALIAS", "runs:/RUN/PATH"
TIMM_CHECKPOINT = ("a timm checkpoint (model.safetensors or pytorch_model.bin, a path or s3:// URI), or random; timm's "
                   "pretrained weights are never downloaded at run time")
HOLDS_ITS_OWN = WeightsRule(OWN_WEIGHTS, (OWN_WEIGHTS, RANDOM_WEIGHTS))  # a Hugging Face folder's, an MLflow model's


def _timm() -> NetworkCode:
    from inference import timm_models  # torch and timm: only once a job names a timm model

    return timm_models


def _hf() -> NetworkCode:
    from inference import hf_models

    return hf_models


def _mlflow() -> NetworkCode:
    from inference import mlflow_models

    return mlflow_models


def _hf_folder(text: str) -> str | None:
    folder = name_after(text, "hf:", HF_FORM)
    return None if folder is None else normalise(folder)  # a URI spelt one way: hf:S3://b/vit is hf:s3://b/vit


def _mlflow_uri(text: str) -> str | None:
    return name_after(text, "models:/", MODELS_FORM, whole=True) or name_after(text, "runs:/", RUNS_FORM, whole=True)


TORCHVISION = Source(
    kind="torchvision", forms=(f"a torchvision name ({', '.join(list(ARCHS)[:3])}, ...)",), prefix="",
    parse=torchvision_models.parse,
    weights=WeightsRule(IMAGENET_WEIGHTS, (IMAGENET_WEIGHTS, RANDOM_WEIGHTS), files=True),
    read=torchvision_models.read, open=torchvision_models.open_model, folder=torchvision_models.no_folder, arch=True)
SOURCES: dict[str, Source] = {source.kind: source for source in (
    TORCHVISION,
    Source(kind="timm", forms=(TIMM_FORM,), prefix="timm:", parse=partial(name_after, prefix="timm:", form=TIMM_FORM),
           weights=WeightsRule(None, (RANDOM_WEIGHTS,), files=True, needed=TIMM_CHECKPOINT),
           read=partial(read_network, _timm), open=partial(load_network, _timm), folder=partial(local_folder, _timm),
           extra="timm", modules=("timm", "safetensors")),
    Source(kind="hf", forms=(HF_FORM,), prefix="hf:", parse=_hf_folder, weights=HOLDS_ITS_OWN,
           read=partial(read_network, _hf), open=partial(load_network, _hf), folder=partial(local_folder, _hf),
           extra="hf", modules=("transformers", "safetensors")),
    Source(kind="mlflow", forms=(MODELS_FORM, RUNS_FORM), prefix="", parse=_mlflow_uri, weights=HOLDS_ITS_OWN,
           read=partial(read_network, _mlflow), open=partial(load_network, _mlflow),
           folder=partial(local_folder, _mlflow), extra="mlflow", modules=("mlflow",)),
)}


@dataclass(frozen=True)
class ModelRef:
    """What ``--model`` names: a source, and the name within it."""

    source: Source
    name: str  # a torchvision name, timm's model name, the HF folder (its URI spelt one way), the whole MLflow URI

    @property
    def kind(self) -> str:
        return self.source.kind

    @property
    def given(self) -> str:
        """As --model spells it (one spelling: what the config and the manifest record)."""
        return self.source.prefix + self.name

    @property
    def arch(self) -> str | None:
        """As --arch, --model's old name, spells it: a torchvision name; None for every other source."""
        return self.name if self.source.arch else None


def parse_model(text: str) -> ModelRef:
    """``--model``'s value as a source and a name; ``WeightsError`` naming the forms for anything else."""
    for source in SOURCES.values():
        name = source.parse(text)
        if name is not None:
            return ModelRef(source, name)
    forms = ", ".join(form for source in SOURCES.values() for form in source.forms)
    raise WeightsError(f"--model {text}: not a model source; pass {forms}")


def source_of(kind: str) -> Source:
    """The source a ``ModelSpec.kind`` names; WeightsError for a kind no row has."""
    try:
        return SOURCES[kind]
    except KeyError:
        raise WeightsError(f"a model of source kind {kind!r}, which is none of {', '.join(SOURCES)}; describe it "
                           "with inference.describe_model") from None


def require_library(model: ModelRef) -> None:
    """One line naming the ``pip install`` when the source's extra is not installed here."""
    model.source.require_library(model.given)


def weights_for_source(model: ModelRef, weights: str | None, sample: bool) -> str:
    """The ``--weights`` a job with ``model`` uses (``weights`` as given; None: the source's default), or
    ``WeightsError`` for weights the source does not take. ``sample``: the built-in sample, random by default."""
    return model.source.weights.chosen(model.given, weights, sample)
