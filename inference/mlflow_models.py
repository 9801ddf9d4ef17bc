"""``--model models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``runs:/RUN/PATH``: an MLflow PyTorch model.

Use it through its row of ``inference.sources`` (its ``inference.network.NetworkCode``: ``locate``, ``open_network``,
``local_folder``). The registry is MLflow's own (``MLFLOW_TRACKING_URI``/``MLFLOW_REGISTRY_URI``; a ``sqlite:///``
store works with no server). The driver pins what it names (``locate``: an alias to its version) and records the two
URIs it used, so every worker reads the same version from the same store, whatever its own environment says. A local
store is checked before MLflow touches it (``inference.mlflow_store``): MLflow would create a missing sqlite file (and
its folder) as an empty registry, and retry a folder or a file that is not a database for minutes.

What MLflow saves for the PyTorch flavour:
- MLflow 3's default, ``pt2``: a ``torch.export`` program, loaded by MLflow after its check that the
  file holds no pickle; its graph's final ``aten.linear`` becomes the head (``inference.graph_head``);
- ``pickle`` (MLflow 2's format, 3's on request): the pickled module, loaded as MLflow allows it
  (``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``: true by default in MLflow 3.17; unpickling runs code, so
  the choice is the user's, never changed here); its head is its last ``nn.Linear``, checked by the
  driver's probe (``inference.probe``).
The recipe and names are those logged with it: ``log_model(..., metadata={"recipe": {...},
"class_names": [...]})``, the recipe any subset of its fields over torchvision's ResNet50 recipe; a
pickled timm model with no logged recipe gets timm's; a model with none needs the options' sizes and colours. ``random``: the model's own layers with every
weight of two or more dimensions drawn again, seeded (torch's default Linear/Conv initialisation).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import fx, nn

from inference.errors import WeightsError
from inference.files import sha256_of
from inference.graph_head import with_head
from inference.memory import FLOAT32, require_fits
from inference.mlflow_store import absolute_store, check_store
from inference.model_recipe import RecipeDraft
from inference.network import Located, Network
from inference.weights import RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED

MODEL_URI = re.compile(r"models:/(?P<name>[^/@]+)(?:/(?P<version>\d+)|@(?P<alias>[^/]+))/?")
DATA_FILES = ("data/model.pt2", "data/model.pth")  # pt2 (MLflow 3's default) and pickle: what the weights' digest is of
NAME_KEYS = ("class_names", "classes")
PROGRESS = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
EXPORTED = "torch.export program"  # the arch of a pt2 model: a graph, no class of its own
NO_RECIPE = ("resize", "crop", "mean", "std")  # what a model that logs no recipe must be given


def locate(uri: str, s3_endpoint_url: str | None) -> Located:
    """The model's version pinned (an alias resolved), and the store it was found in; WeightsError when it is not there."""
    import mlflow
    from mlflow.exceptions import MlflowException

    store = (absolute_store(mlflow.get_tracking_uri()), absolute_store(mlflow.get_registry_uri()))
    for uri_of_store in dict.fromkeys(store):
        check_store(uri_of_store)
    client = mlflow.MlflowClient(tracking_uri=store[0], registry_uri=store[1])
    try:
        pinned = _pinned(uri, client)
    except MlflowException as e:
        raise WeightsError(f"--model {uri} does not resolve in MLflow's registry at {store[1]} ({e.message}); check the "
                           "name, version or alias, and MLFLOW_TRACKING_URI / MLFLOW_REGISTRY_URI") from e
    return Located(f"mlflow:{pinned}", pinned, store)


def local_folder(location: str, weights: str, s3_endpoint_url: str | None, store: tuple[str, ...] | None) -> str:
    """A local folder holding the MLflow model (``location`` itself when it is one), e.g. to ship it."""
    return location if os.path.isdir(location) else _downloaded(location, store)


def open_network(location: str, weights: str, s3_endpoint_url: str | None, store: tuple[str, ...] | None) -> Network:
    """The model at ``location`` (a pinned MLflow URI, or a local copy of one), with its recipe, names and head."""
    local = local_folder(location, weights, s3_endpoint_url, store)
    shown = f"mlflow:{location}"
    metadata, data = _described(local, shown)
    require_fits(os.path.getsize(data) // FLOAT32, shown)  # the data file holds the weights, in fp32 as people log them
    loaded = _loaded(local, shown)
    module, head = _with_head(loaded, shown)
    if weights == RANDOM_WEIGHTS:
        _redraw(module)
    recipe = _recipe(metadata.get("recipe"), loaded, shown)
    names = next((metadata[key] for key in NAME_KEYS if metadata.get(key) is not None), None)
    arch = EXPORTED if isinstance(loaded, fx.GraphModule) else type(loaded).__name__
    return Network(module, head, arch, None if weights == RANDOM_WEIGHTS else sha256_of(data), recipe,
                   names, None if names is None else f"logged with {shown}")


def _pinned(uri: str, client: object) -> str:
    if uri.startswith("runs:/"):
        client.get_run(uri[len("runs:/"):].split("/", 1)[0])  # raises for a run that is not there
        return uri
    match = MODEL_URI.fullmatch(uri)
    if match is None:
        raise WeightsError(f"--model {uri}: expected models:/NAME/VERSION or models:/NAME@ALIAS")
    name = match["name"]
    version = (client.get_model_version(name, match["version"]) if match["version"]
               else client.get_model_version_by_alias(name, match["alias"]))
    return f"models:/{name}/{version.version}"


def _downloaded(location: str, store: tuple[str, ...] | None) -> str:
    import mlflow
    from mlflow.exceptions import MlflowException

    tracking, registry = store or (None, None)
    for uri_of_store in dict.fromkeys(store or ()):
        check_store(uri_of_store)
    # MLflow resolves a models:/ URI in the process's registry whatever registry_uri says: in a worker that is the
    # default store of its working directory, so the store the driver resolved it in is named by the environment.
    named = {"MLFLOW_TRACKING_URI": tracking, "MLFLOW_REGISTRY_URI": registry} if store else {}
    with _environment({PROGRESS: "false", **named}):
        try:
            return mlflow.artifacts.download_artifacts(artifact_uri=location, dst_path=tempfile.mkdtemp(prefix="mlflow-model-"),
                                                       tracking_uri=tracking, registry_uri=registry)
        except MlflowException as e:
            raise WeightsError(f"cannot read mlflow:{location} from {registry} ({e.message}); check MLflow's store") from e


def _described(local: str, shown: str) -> tuple[Mapping[str, object], str]:
    """(the MLmodel's metadata, the model's data file): a PyTorch model, or WeightsError naming what it is."""
    from mlflow.models import Model

    try:
        model = Model.load(local)
    except Exception as e:  # MLflow raises its own, OSError, YAML errors... for a folder that is not a model
        raise WeightsError(f"{shown}: not an MLflow model ({' '.join(str(e).split())[:200]})") from e
    if "pytorch" not in model.flavors:
        raise WeightsError(f"{shown}: an MLflow model of flavours {', '.join(model.flavors)}, not pytorch; log it with "
                           "mlflow.pytorch.log_model")
    data = next((os.path.join(local, name) for name in DATA_FILES if os.path.exists(os.path.join(local, name))), None)
    if data is None:
        raise WeightsError(f"{shown}: a pytorch model without {' or '.join(DATA_FILES)}; log it with mlflow.pytorch.log_model")
    return model.metadata or {}, data


def _loaded(local: str, shown: str) -> nn.Module:
    """The module MLflow loads: an exported program's graph (pt2), or the pickled module."""
    import mlflow.pytorch
    from mlflow.exceptions import MlflowException

    try:
        module = mlflow.pytorch.load_model(local, map_location="cpu")
    except MlflowException as e:
        if "pickle" in e.message:
            raise WeightsError(f"{shown}: a pickled model (MLflow's 'pickle' format), which MLflow here refuses to "
                               "unpickle: set MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true (unpickling runs code: for models "
                               "you trust), or log it again with serialization_format='pt2'") from e
        raise WeightsError(f"{shown}: MLflow cannot load it ({e.message})") from e
    except (ImportError, AttributeError) as e:  # the pickled module's class is not importable here
        raise WeightsError(f"{shown}: its module's code is not importable here ({e}); log it with code_paths, or "
                           "install the package that defines it") from e
    return module


def _with_head(module: nn.Module, shown: str) -> tuple[nn.Module, str]:
    """The module in eval mode and its head's path: an exported graph's final Linear as a submodule, or the last
    nn.Linear of a pickled module (the driver's probe checks it is the network's last step)."""
    if isinstance(module, fx.GraphModule):
        return with_head(module, shown)
    heads = [name for name, m in module.named_modules() if isinstance(m, nn.Linear)]
    if not heads:
        raise WeightsError(f"{shown}: no nn.Linear to be its head; log a model whose forward returns a final Linear's logits")
    return module.eval(), heads[-1]


def _redraw(module: nn.Module) -> None:
    """Every weight of 2+ dimensions drawn again, seeded, as torch initialises a Linear or a Conv; the rest kept."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(RANDOM_WEIGHTS_SEED)
        for parameter in module.parameters():
            if parameter.ndim >= 2:
                nn.init.kaiming_uniform_(parameter, a=math.sqrt(5))


def _recipe(logged: object, module: nn.Module, shown: str) -> RecipeDraft:
    if logged is not None:
        if not isinstance(logged, Mapping):
            raise WeightsError(f"{shown}: its logged recipe must be a dict of the recipe's fields, found {logged!r}")
        return RecipeDraft(f"logged with {shown} ({', '.join(logged)}; the rest torchvision's ResNet50 recipe)", logged)
    if isinstance(getattr(module, "pretrained_cfg", None), Mapping):  # a timm model, pickled
        import timm.data

        from inference.timm_recipe import recipe_from_timm

        return recipe_from_timm(timm.data.resolve_data_config({}, model=module), type(module).__name__)
    why = "it logged no recipe (log_model(..., metadata={'recipe': {...}}))"
    return RecipeDraft("a bilinear centre crop (the model says none)", unsaid=dict.fromkeys(NO_RECIPE, why))


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
