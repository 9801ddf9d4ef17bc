"""Sources that hand over a network (timm, Hugging Face, MLflow): what their code provides, read once per process.

Each such source's module (``inference.timm_models``, ``hf_models``, ``mlflow_models``) is ``NetworkCode``:
``locate`` pins what ``--model`` names (an MLflow alias to its version; on the driver), ``open_network`` builds the
network with its weights as a ``Network`` (the module, its final Linear, and what the source says of itself: recipe,
class names, weights digest), ``local_folder`` gives its files on this machine. ``read_network``, ``load_network``
and ``local_folder`` here are those sources' ``read``, ``open`` and ``folder`` (``inference.source``): the network is
opened once per process (``network_for``: the driver's description, then its own workers, reuse it), a worker
refuses weights whose digest changed since the driver's, and the driver measures the network by running it once
(``inference.probe``). Torch-free to import: the table of sources imports it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from inference.errors import WeightsError
from inference.source import Found, Opened
from inference.spec import POOLED, ModelSpec
from storage import redact

if TYPE_CHECKING:
    from torch import nn

    from inference.model_recipe import RecipeDraft


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


class NetworkCode(Protocol):
    """What a network source's module provides (it imports torch and the source's library)."""

    def locate(self, name: str, s3_endpoint_url: str | None) -> Located: ...

    def open_network(self, location: str, weights: str, s3_endpoint_url: str | None,
                     store: tuple[str, ...] | None) -> Network: ...

    def local_folder(self, location: str, weights: str, s3_endpoint_url: str | None,
                     store: tuple[str, ...] | None) -> str | None: ...


# The module, imported when first asked for (by an import statement: a SageMaker archive ships what its code imports).
Code = Callable[[], NetworkCode]


@functools.lru_cache(maxsize=2)
def network_for(code: Code, location: str, weights: str, s3_endpoint_url: str | None,
                store: tuple[str, ...] | None) -> Network:
    """The network at ``location`` with ``weights``, opened once per process; callers take a copy (``load_network``)."""
    return code().open_network(location, weights, s3_endpoint_url, store)


def read_network(code: Code, name: str, weights: str, s3_endpoint_url: str | None) -> Found:
    """What the driver reads of the network ``--model`` names: opened here once, measured on demand by running it."""
    from inference.probe import probe  # torch: the network is open already

    located = code().locate(name, s3_endpoint_url)
    network = network_for(code, located.location, weights, s3_endpoint_url, located.store)
    measure = functools.partial(probe, network.module, network.head, located.source)
    return Found(located.source, network.arch, network.recipe, measure,
                 names=network.names, names_source=network.names_source, sha256=network.sha256,
                 location=located.location, store=located.store, embedding=network.embedding,
                 multi_label=network.multi_label)


def load_network(code: Code, spec: ModelSpec, s3_endpoint_url: str | None) -> Opened:
    """A copy of the network ``spec`` describes, this caller's own; refused when its weights changed since the
    driver's."""
    network = network_for(code, spec.location, spec.weights, s3_endpoint_url, spec.store)
    if spec.weights_sha256 is not None and network.sha256 != spec.weights_sha256:
        raise WeightsError(f"{redact(spec.source)}: its weights changed after the job checked them (sha256 "
                           f"{(network.sha256 or 'none')[:12]}..., was {spec.weights_sha256[:12]}...); leave the model "
                           "in place while a job runs, and run it again")
    return Opened(copy.deepcopy(network.module), network.head)


def local_folder(code: Code, spec: ModelSpec, s3_endpoint_url: str | None) -> str | None:
    """A local folder holding a folder source's files (an HF folder, an MLflow model), e.g. to ship them; None: the
    source is a name and a weights file (timm)."""
    return code().local_folder(spec.location, spec.weights, s3_endpoint_url, spec.store)

