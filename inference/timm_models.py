"""``--model timm:NAME``: ``timm.create_model(NAME, pretrained=False)`` holding ``--weights``' state dict.

Use it through its row of ``inference.sources`` (its ``inference.network.NetworkCode``: ``locate``, ``open_network``,
``local_folder``). The weights are a timm checkpoint as people keep them (timm's ``model.safetensors`` or
``pytorch_model.bin``, or ``torch.save(model.state_dict())``, in any layout ``inference.checkpoint`` reads), loaded
strictly: a key missing, unexpected or of another shape is refused by name. The head's size comes from the checkpoint
(``num_classes`` 0, a headless checkpoint, is an embedder of timm's pooled feature). Nothing is downloaded:
``pretrained`` is never asked of timm.

- recipe: ``recipe_from_timm(resolve_data_config({}, model=m))`` (``inference.timm_recipe``), timm's own eval transform
  as numbers (its ``transforms_imagenet_eval``: resize ``floor(size / crop_pct)``, crop ``size``, centre or squash);
- names: the checkpoint's, else timm's ImageNet label info (``infer_imagenet_subset``) when the head is
  the size the model's pretrained_cfg was trained with;
- embedding: the final Linear's input, timm's ``forward_head(x, pre_logits=True)``; a distilled model's two heads
  (``deit_*_distilled_*``: their logits averaged) read as one over both tokens side by side (``inference.heads``).

``timm:hf-hub:ORG/NAME`` is built from the config the Hugging Face cache on this machine already holds (timm would
ask the Hub for it, even with ``pretrained=False``): one line at once when the cache has none, never a wait on the
network. ``timm:local-dir:FOLDER`` reads a folder's own ``config.json``. Before a network is built its parameters
are counted on the meta device and checked against this machine's memory (``inference.memory``).
"""

from __future__ import annotations

import os
from collections import Counter

import torch
from torch import nn

from inference.checkpoint import Checkpoint, read_checkpoint, some_keys
from inference.errors import WeightsError
from inference.heads import averaged_heads
from inference.memory import require_fits
from inference.network import Located, Network
from inference.timm_recipe import recipe_from_timm
from inference.weights import RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED
from storage import redact

EMBEDDING = "the pooled feature: the final Linear's input (timm's forward_head(x, pre_logits=True))"
AVERAGED = "its {count} heads' inputs side by side ({heads}: the class and distillation tokens), whose logits it averages"
HUB, LOCAL_DIR = "hf-hub:", "local-dir:"  # timm's model-name sources: the Hugging Face Hub, a local folder


def locate(name: str, s3_endpoint_url: str | None) -> Located:
    return Located(f"timm:{name}", name)


def local_folder(name: str, weights: str, s3_endpoint_url: str | None, store: object) -> None:
    """None: a timm model is a name and a weights file (``--weights``), not a folder."""
    return None


def open_network(name: str, weights: str, s3_endpoint_url: str | None, store: object) -> Network:
    """timm's ``name`` with ``weights`` (a checkpoint URI, or random), its recipe, names and head."""
    import timm.data

    built = _offline(name)
    require_fits(_parameters(built), f"--model timm:{name}")
    checkpoint = None if weights == RANDOM_WEIGHTS else read_checkpoint(weights, s3_endpoint_url)
    module = _random(built) if checkpoint is None else _with_weights(built, name, checkpoint, redact(weights))
    recipe = recipe_from_timm(timm.data.resolve_data_config({}, model=module), name)
    if checkpoint is not None and checkpoint.recipe is not None:
        recipe = recipe.over(checkpoint.recipe, redact(weights))
    names, names_source = _names(module, checkpoint, weights)
    module, head, embedding = _with_head(module, name)
    return Network(module, head, name, None if checkpoint is None else checkpoint.sha256, recipe, names, names_source,
                   embedding)


def _offline(name: str) -> str:
    """What ``timm.create_model`` is given for ``name``: an ``hf-hub:`` name as the local folder the Hugging Face
    cache holds its config in; WeightsError at once when it holds none (the job never downloads at run time)."""
    if not name.startswith(HUB):
        return name
    from huggingface_hub import try_to_load_from_cache

    repo, _, revision = name[len(HUB):].partition("@")  # ORG/NAME@REVISION, as timm splits it
    cached = try_to_load_from_cache(repo, "config.json", revision=revision or None)
    if not isinstance(cached, str):
        raise WeightsError(f"--model timm:{name}: its config.json is not in this machine's Hugging Face cache, and the "
                           f"job never downloads at run time; download the model once (huggingface-cli download {repo}), "
                           f"or pass timm:{LOCAL_DIR}FOLDER holding its config.json, with --weights its checkpoint")
    return LOCAL_DIR + os.path.dirname(cached)


def _parameters(built: str) -> int:
    """The parameters of timm's ``built`` (with its pretrained head), counted on the meta device."""
    with torch.device("meta"):
        return sum(parameter.numel() for parameter in _model(built).parameters())


def _with_head(module: nn.Module, name: str) -> tuple[nn.Module, str | None, str]:
    """(the module, its final Linear's path or None for an embedder, what its embedding is): a distilled model's two
    heads merged into one (``inference.heads``)."""
    classifier = module.pretrained_cfg.get("classifier")
    if not module.num_classes:
        return module.eval(), None, EMBEDDING
    if isinstance(classifier, str):
        return module.eval(), classifier, EMBEDDING
    size = module.pretrained_cfg.get("input_size", (3, 224, 224))[-1]
    probe = torch.rand((2, 3, size, size), generator=torch.Generator().manual_seed(0))
    heads = list(classifier)
    merged = averaged_heads(module.eval(), heads, _forward, probe, _forward, f"--model timm:{name}")
    return merged, "head", AVERAGED.format(count=len(heads), heads=", ".join(heads))


def _forward(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return module(x)


def _model(name: str, **kwargs: object) -> nn.Module:
    import timm

    try:
        return timm.create_model(name, pretrained=False, **kwargs)
    except RuntimeError as e:  # "Unknown model (...)"
        raise WeightsError(f"--model timm:{name}: {' '.join(str(e).split())}; timm.list_models('{name[:4]}*') lists "
                           "the names timm has") from e


def _random(name: str) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_WEIGHTS_SEED)
        return _model(name)


def _with_weights(built: str, name: str, checkpoint: Checkpoint, shown: str) -> nn.Module:
    """timm's ``built`` (``name`` as --model says it) with a head of the checkpoint's size, holding its tensors;
    WeightsError naming what does not fit. A distilled model's heads are both of that size."""
    with torch.device("meta"):
        classifier = _model(built).pretrained_cfg.get("classifier")
    first = classifier if isinstance(classifier, str) else classifier[0]
    weight = checkpoint.state.get(f"{first}.weight")
    weight = checkpoint.state.get(f"{classifier}.weight")
    logits = weight.shape[0] if isinstance(weight, torch.Tensor) and weight.ndim == 2 else 0  # 0: no head, an embedder
    module = _model(built, num_classes=logits)
    expected = module.state_dict()
    missing = [key for key in expected if key not in checkpoint.state]
    unexpected = [key for key in checkpoint.state if key not in expected]
    misshapen = [f"{key} {tuple(checkpoint.state[key].shape)} where timm has {tuple(expected[key].shape)}"
                 for key in expected if key in checkpoint.state and checkpoint.state[key].shape != expected[key].shape]
    problems = [f"{len(keys)} {kind} ({some_keys(keys)})" for kind, keys in
                (("missing keys", missing), ("unexpected keys", unexpected), ("shapes differ", misshapen)) if keys]
    if problems:
        raise WeightsError(f"{shown}: not a timm {name} state dict: {'; '.join(problems)}; pass the timm:NAME it was "
                           "trained as, or a checkpoint of this one")
    module.load_state_dict(checkpoint.state)
    return module


def _names(module: nn.Module, checkpoint: Checkpoint | None, weights: str) -> tuple[object, str | None]:
    """The checkpoint's names, else timm's ImageNet label info for a head of its pretrained_cfg's size; None for random."""
    if checkpoint is None:
        return None, None
    if checkpoint.class_names is not None:
        return checkpoint.class_names, f"checkpoint {redact(weights)}"
    from timm.data import ImageNetInfo, infer_imagenet_subset

    subset = infer_imagenet_subset(module.pretrained_cfg)
    if subset is None or module.num_classes != module.pretrained_cfg.get("num_classes"):
        return None, None
    info = ImageNetInfo(subset)
    return _distinct(info.label_descriptions(), info.label_names()), f"timm's {subset} label info"


def _distinct(descriptions: list[str], synsets: list[str]) -> list[str]:
    """WordNet's lemmas by class; one that names two classes ("crane": the bird, the machine) gets its synset added."""
    counts = Counter(descriptions)
    return [f"{text} ({synset})" if counts[text] > 1 else text for text, synset in zip(descriptions, synsets)]
