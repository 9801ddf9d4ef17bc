"""The contract every model source implements: ``Source``, one typed record per place a model comes from. Torch-free.

A source (torchvision, timm, Hugging Face, MLflow: the table is ``inference.sources.SOURCES``) says how ``--model``
spells it (``parse``), which ``--weights`` it takes (``WeightsRule``), what it reads of a model on the driver
(``read``: a ``Found``, which carries the model's own recipe and class names), how a worker opens the network
(``open``, once per process), what a SageMaker archive must carry of it (``folder``), and the pip extra and import
names it needs. ``inference.describe.describe_model`` is the one description made of any source's ``Found``: the
options over its recipe, ``--labels`` over its names, its head measured on the recipe's images, one ``ModelSpec``
that records the source's ``kind``; ``inference.load_model`` opens that spec with the source its kind names.

Why a frozen dataclass of callables, not a ``typing.Protocol``: a source is a row of a table, as an engine is
(``job.engine.Engine``): data (its forms, extra, weights rule) beside the functions that do its work, checked by a
type checker field by field, with no class to subclass. And the table must stay importable without torch (the
config parses ``--model`` on a CPU, a throughput run describes random weights with no torch): a record holds plain
functions, which reach torch and the source's library only when called, where a Protocol's implementations would be
classes in the modules that import them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from inference.errors import WeightsError
from inference.spec import POOLED, ModelSpec
from inference.weights import NAMED_WEIGHTS, OWN_WEIGHTS, RANDOM_WEIGHTS

if TYPE_CHECKING:
    from torch import nn

    from inference.model_recipe import RecipeDraft
    from preprocess.recipe import Recipe

PACKAGE = "streaming-batch-inference"  # what `pip install '<package>[extra]'` names


@dataclass(frozen=True)
class WeightsRule:
    """Which ``--weights`` a source takes, and which it uses when none is given."""

    default: str | None  # when --weights is left out (the built-in sample: random); None: it must be given
    named: tuple[str, ...]  # the named weights it takes: imagenet, random, own (inference.weights)
    files: bool = False  # a checkpoint, a path or s3:// URI; False: the source holds its weights (--weights own)
    needed: str = ""  # what to pass when there is no default, e.g. "a timm checkpoint (...), or random"

    def chosen(self, given: str, weights: str | None, sample: bool) -> str:
        """The ``--weights`` a job with ``--model given`` uses (``weights`` as given; None: the default), or
        ``WeightsError`` for weights the source does not take. ``sample``: the built-in sample, random by default."""
        if weights is None:
            if sample:
                return RANDOM_WEIGHTS
            if self.default is None:
                raise WeightsError(f"--model {given} needs --weights: {self.needed}")
            return self.default
        if weights in self.named or (self.files and weights not in NAMED_WEIGHTS):
            return weights
        if weights == OWN_WEIGHTS:
            raise WeightsError(f"--weights {OWN_WEIGHTS}: --model {given} holds no weights of its own; pass a "
                               f"checkpoint or {RANDOM_WEIGHTS}")
        if not self.files:
            raise WeightsError(f"--weights {weights}: --model {given} holds its own weights; leave --weights out "
                               f"(or pass {OWN_WEIGHTS}), or pass {RANDOM_WEIGHTS}")
        raise WeightsError(f"--weights {weights} names torchvision's weights; for --model {given} pass {self.needed}")


@dataclass(frozen=True)
class Found:
    """What a source reads of a model on the driver: what the model says of itself, before the options and --labels."""

    lineage: str  # how the lineage column and the manifest name it (ModelSpec.source): resnet50, timm:convnext_tiny
    arch: str  # the network within its source: a torchvision name, timm's name, the HF architecture, the MLflow class
    recipe: RecipeDraft  # its own eval recipe (its weights' transforms(), pretrained_cfg, image processor, logged)
    # (logits, embedding size) of the network on images of a recipe's size; 0 logits: an embedder, no head
    measure: Callable[[Recipe], tuple[int, int]]
    names: Sequence[str] | None = None  # the class names it carries (a checkpoint's, ImageNet's, id2label, logged)
    names_source: str | None = None  # where they came from, for the manifest and a refusal
    sha256: str | None = None  # its weights' bytes; None: random, or torchvision's ImageNet weights (hash-checked)
    location: str | None = None  # what a worker opens (ModelSpec.location): timm's name, the folder, the pinned URI
    store: tuple[str, ...] | None = None  # MLflow: (tracking URI, registry URI) it was found in
    embedding: str = POOLED  # what its embedding column holds
    multi_label: bool = False  # a head of independent yes/no classes, each scored by its sigmoid (inference.scores)
    input_size: int | None = None  # the one crop the network takes (a torchvision ViT's position embeddings)


class Opened(NamedTuple):
    """The network a worker runs: its own copy, in eval mode, on the CPU."""

    module: nn.Module  # module(x) -> the head's logits (N, C); or the embedding (N, D) when head is None
    head: str | None  # dotted path of the final nn.Linear (its input is the embedding); None: an embedder


@dataclass(frozen=True)
class Source:
    """One place a model comes from: a row of ``inference.sources.SOURCES``."""

    kind: str  # its key in the table, and what ModelSpec.kind records: torchvision | timm | hf | mlflow
    forms: tuple[str, ...]  # how --model spells it, for messages: "timm:NAME"
    prefix: str  # what --model writes before the name: "timm:", "hf:"; "": the name alone (an MLflow URI is whole)
    parse: Callable[[str], str | None]  # a --model value -> the name within the source; None: another source's
    weights: WeightsRule  # which --weights it takes
    read: Callable[[str, str, str | None], Found]  # (name, weights, S3 endpoint) -> the model, read on the driver
    open: Callable[[ModelSpec, str | None], Opened]  # (spec, S3 endpoint) -> its network; weights read once a process
    # (spec, S3 endpoint) -> a local folder of the model's files, for a SageMaker archive to carry; None: it is a name
    # and a weights file (torchvision, timm), which the archive carries as model.pth
    folder: Callable[[ModelSpec, str | None], str | None]
    extra: str | None = None  # the pip extra that brings its library
    modules: tuple[str, ...] = ()  # the import names that extra provides, checked before any import
    arch: bool = False  # its names are --arch's too (--model's old name): a torchvision classifier

    def require_library(self, given: str) -> None:
        """One line naming the ``pip install`` when the extra of ``--model given``'s source is not installed here."""
        missing = next((m for m in self.modules if importlib.util.find_spec(m) is None), None)
        if missing is not None:
            raise WeightsError(f"--model {given} needs {missing!r}, which the [{self.extra}] extra brings: "
                               f"pip install '{PACKAGE}[{self.extra}]'")


def name_after(text: str, prefix: str, form: str, *, whole: bool = False) -> str | None:
    """The name ``text`` gives after ``prefix`` (``whole``: the text itself, prefix and all); None when it does not
    start with it; WeightsError when nothing follows it."""
    if not text.startswith(prefix):
        return None
    name = text if whole else text[len(prefix):]
    if not name.strip("/") or name == prefix:
        raise WeightsError(f"--model {text}: {form} names nothing after {prefix!r}")
    return name
