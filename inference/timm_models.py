"""``--model timm:NAME``: ``timm.create_model(NAME, pretrained=False)`` holding ``--weights``' state dict.

Use it through ``inference.families`` (``locate``, ``open_network``). The weights are a timm
checkpoint as people keep them (timm's ``model.safetensors`` or ``pytorch_model.bin``, or
``torch.save(model.state_dict())``, in any layout ``inference.checkpoint`` reads), loaded strictly:
a key missing, unexpected or of another shape is refused by name. The head's size comes from
the checkpoint (``num_classes`` 0, a headless checkpoint, is an embedder of timm's pooled
feature). Nothing is downloaded: ``pretrained`` is never asked of timm.

- recipe: ``recipe_from_timm(resolve_data_config({}, model=m))``, timm's own eval transform as numbers
  (its ``transforms_imagenet_eval``: resize ``floor(size / crop_pct)``, crop ``size``, centre or squash);
- names: the checkpoint's, else timm's ImageNet label info (``infer_imagenet_subset``) when the head is
  the size the model's pretrained_cfg was trained with;
- embedding: the final Linear's input, timm's ``forward_head(x, pre_logits=True)``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

import torch
from torch import nn

from inference.checkpoint import Checkpoint, read_checkpoint, some_keys
from inference.errors import WeightsError
from inference.network import Located, Network
from inference.spec import layered_recipe
from inference.weights import RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED
from preprocess.recipe import Recipe
from storage import redact

TIMM_CROP_MODES = ("center", "squash")  # timm's "border" pads: no recipe of ours
TIMM_INTERPOLATIONS = ("bilinear", "bicubic")
EMBEDDING = "the pooled feature: the final Linear's input (timm's forward_head(x, pre_logits=True))"


def locate(name: str, s3_endpoint_url: str | None) -> Located:
    return Located(f"timm:{name}", name)


def local_folder(name: str, weights: str, s3_endpoint_url: str | None, store: object) -> None:
    """None: a timm model is a name and a weights file (``--weights``), not a folder."""
    return None


def open_network(name: str, weights: str, s3_endpoint_url: str | None, store: object) -> Network:
    """timm's ``name`` with ``weights`` (a checkpoint URI, or random), its recipe, names and head."""
    import timm.data

    checkpoint = None if weights == RANDOM_WEIGHTS else read_checkpoint(weights, s3_endpoint_url)
    module = _random(name) if checkpoint is None else _with_weights(name, checkpoint, redact(weights))
    recipe, recipe_source = recipe_from_timm(timm.data.resolve_data_config({}, model=module), name)
    if checkpoint is not None and checkpoint.recipe is not None:
        if not isinstance(checkpoint.recipe, Mapping):
            raise WeightsError(f"{redact(weights)}: its recipe must be a dict of the recipe's fields, found {checkpoint.recipe!r}")
        recipe, recipe_source = layered_recipe(recipe, recipe_source, [(checkpoint.recipe, redact(weights))])
    names, names_source = _names(module, checkpoint, weights)
    head = module.pretrained_cfg["classifier"] if module.num_classes else None
    return Network(module.eval(), head, name, None if checkpoint is None else checkpoint.sha256, recipe, recipe_source,
                   names, names_source, EMBEDDING)


def recipe_from_timm(data_config: Mapping[str, object], name: str) -> tuple[Recipe, str]:
    """timm's eval transform (``resolve_data_config``'s dict) as a Recipe, and where it came from."""
    _, height, width = data_config["input_size"]
    crop_mode = data_config.get("crop_mode") or "center"
    interpolation = data_config.get("interpolation") or "bilinear"
    problem = (f"a {height}x{width} input (the recipe crops squares)" if height != width else
               f"crop_mode {crop_mode!r}" if crop_mode not in TIMM_CROP_MODES else
               f"interpolation {interpolation!r}" if interpolation not in TIMM_INTERPOLATIONS else None)
    if problem is not None:
        raise WeightsError(f"timm:{name}: its pretrained_cfg asks for {problem}, which the recipe has no form for; "
                           "pass the recipe options (--resize, --crop, --interpolation, --crop-mode)")
    crop_pct = float(data_config.get("crop_pct") or 0.875)  # timm's DEFAULT_CROP_PCT
    recipe = Recipe(resize=math.floor(height / crop_pct), crop=height, mean=tuple(data_config["mean"]),
                    std=tuple(data_config["std"]), interpolation=interpolation, crop_mode=crop_mode)
    return recipe, f"timm's {name} pretrained_cfg (resolve_data_config: crop_pct {crop_pct:g})"


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


def _with_weights(name: str, checkpoint: Checkpoint, shown: str) -> nn.Module:
    """timm's ``name`` with a head of the checkpoint's size, holding its tensors; WeightsError naming what does not fit."""
    with torch.device("meta"):
        classifier = _model(name).pretrained_cfg.get("classifier")
    if not isinstance(classifier, str):
        raise WeightsError(f"--model timm:{name} has {classifier!r} as its classifier; only models with one head are read")
    weight = checkpoint.state.get(f"{classifier}.weight")
    logits = weight.shape[0] if isinstance(weight, torch.Tensor) and weight.ndim == 2 else 0  # 0: no head, an embedder
    module = _model(name, num_classes=logits)
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
