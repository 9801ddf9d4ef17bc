"""``--model hf:PATH``: a Hugging Face folder written by ``save_pretrained``, local or ``s3://``.

Use it through ``inference.families`` (``locate``, ``open_network``). The folder holds
``config.json``, ``model.safetensors`` and ``preprocessor_config.json`` (an S3 folder's three files
are copied to a local folder once per process). Its ``architectures`` entry says what it is:
- ``...ForImageClassification`` (``AutoModelForImageClassification``): a classifier; names from
  ``id2label`` (unless they are transformers' placeholders ``LABEL_0``...); the embedding is its
  final Linear's input (a ViT's class token after the last norm, a ConvNeXt's pooled feature);
- an embedder of ``TOWERS``: the vision tower of CLIP or SigLIP, from the tower's own folder or a
  whole CLIP/SigLIP folder (its text side left unread), or DINOv2; its embedding as the table says.
Loaded with ``local_files_only`` and in fp32; a key missing, of another shape, or unexpected (but
the text side of a whole CLIP/SigLIP) is refused by name. The recipe is ``inference.hf_recipe``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from inference.checkpoint import some_keys
from inference.errors import WeightsError
from inference.files import sha256_of
from inference.hf_folder import CONFIG, PROCESSOR, WEIGHTS, on_this_machine, read_json
from inference.hf_recipe import recipe_from_hf
from inference.network import Located, Network
from inference.weights import RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED
from storage import redact

CLASSIFIER = "ForImageClassification"  # the architectures AutoModelForImageClassification builds end so
OTHER_TOWER = ("text_model.", "text_projection.", "logit_scale", "logit_bias")  # a whole CLIP/SigLIP's other side
CLIP_EMBEDS = "CLIP's image embedding: the vision tower's pooled output through its projection, L2-normalised"
SIGLIP_EMBEDS = "SigLIP's image embedding: the vision tower's attention-pooled output, L2-normalised"


@dataclass(frozen=True)
class Tower:
    """An image embedder transformers builds: which class, from which config, and which of its outputs."""

    model_class: str  # transformers' class name
    sub_config: str | None  # a whole model's config key holding the tower's ("vision_config"); None: the config itself
    output: str  # the output's attribute holding the embedding
    normalised: bool  # L2-normalised here, as the model's own similarity does
    embedding: str  # what it is, for the manifest
    carried: tuple[str, ...] = ()  # keys of the whole config the tower's config needs (CLIP's projection size)


TOWERS = {  # by config.json's architectures[0]
    "CLIPModel": Tower("CLIPVisionModelWithProjection", "vision_config", "image_embeds", True, CLIP_EMBEDS, ("projection_dim",)),
    "CLIPVisionModelWithProjection": Tower("CLIPVisionModelWithProjection", None, "image_embeds", True, CLIP_EMBEDS),
    "CLIPVisionModel": Tower("CLIPVisionModel", None, "pooler_output", False,
                             "CLIP's vision tower's pooled output (its class token after the last norm; the folder has no "
                             "projection), not normalised"),
    "SiglipModel": Tower("SiglipVisionModel", "vision_config", "pooler_output", True, SIGLIP_EMBEDS),
    "SiglipVisionModel": Tower("SiglipVisionModel", None, "pooler_output", True, SIGLIP_EMBEDS),
    "Dinov2Model": Tower("Dinov2Model", None, "pooler_output", False,
                         "DINOv2's class token after its last layer norm (pooler_output), not normalised"),
}


class Logits(nn.Module):
    """An ``AutoModelForImageClassification`` as ``module(pixels) -> logits``: (N, 3, H, W) -> (N, classes)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=x).logits


class Embedding(nn.Module):
    """A tower as ``module(pixels) -> embedding``: (N, 3, H, W) -> (N, D), L2-normalised when the model's is."""

    def __init__(self, model: nn.Module, output: str, normalised: bool) -> None:
        super().__init__()
        self.model, self.output, self.normalised = model, output, normalised

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        embedding = getattr(self.model(pixel_values=x), self.output)
        return nn.functional.normalize(embedding, dim=-1) if self.normalised else embedding


def locate(folder: str, s3_endpoint_url: str | None) -> Located:
    return Located(f"hf:{redact(folder)}", folder)


def local_folder(folder: str, weights: str, s3_endpoint_url: str | None, store: object) -> str:
    """A local folder holding the model's files (the folder itself, or a copy of an S3 folder's), e.g. to ship it."""
    return on_this_machine(folder, s3_endpoint_url, weights != RANDOM_WEIGHTS)


def open_network(folder: str, weights: str, s3_endpoint_url: str | None, store: object) -> Network:
    """The folder's classifier or embedder, its weights (or seeded random ones), recipe and names."""
    shown = f"hf:{redact(folder)}"
    local = on_this_machine(folder, s3_endpoint_url, weights != RANDOM_WEIGHTS)
    config = read_json(local, CONFIG, shown, "not a folder written by save_pretrained")
    processor = read_json(local, PROCESSOR, shown, "save the model's image processor beside it (processor.save_pretrained)")
    recipe, recipe_source = recipe_from_hf(processor, shown)
    architecture = (config.get("architectures") or [None])[0]
    sha256 = None if weights == RANDOM_WEIGHTS else _weights_sha256(local, shown)
    if architecture in TOWERS:
        tower = TOWERS[architecture]
        model = _tower(tower, local, weights, shown)
        return Network(Embedding(model, tower.output, tower.normalised).eval(), None, architecture, sha256, recipe,
                       recipe_source, embedding=tower.embedding)
    if not str(architecture).endswith(CLASSIFIER):
        raise WeightsError(f"{shown} holds a {architecture}: neither an image classifier (...{CLASSIFIER}) nor an "
                           f"embedder this job reads ({', '.join(TOWERS)})")
    model = _classifier(local, weights, shown)
    return Network(Logits(model).eval(), "model." + _final_linear(model, shown), architecture, sha256, recipe,
                   recipe_source, *_names(model.config.id2label, shown))


def _tower(tower: Tower, local: str, weights: str, shown: str) -> nn.Module:
    import transformers

    with _quiet():
        config = transformers.AutoConfig.from_pretrained(local, local_files_only=True)
    sub = getattr(config, tower.sub_config) if tower.sub_config else config
    for key in tower.carried:
        setattr(sub, key, getattr(config, key))
    return _load(getattr(transformers, tower.model_class), local, sub, weights, shown, OTHER_TOWER if tower.sub_config else ())


def _classifier(local: str, weights: str, shown: str) -> nn.Module:
    import transformers

    with _quiet():
        config = transformers.AutoConfig.from_pretrained(local, local_files_only=True)
    return _load(transformers.AutoModelForImageClassification, local, config, weights, shown, ())


def _load(cls: type, local: str, config: object, weights: str, shown: str, others: tuple[str, ...]) -> nn.Module:
    """``cls`` with the folder's weights (strictly: ``others`` may be left unread) or seeded random ones, fp32, eval."""
    with _quiet():
        if weights == RANDOM_WEIGHTS:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(RANDOM_WEIGHTS_SEED)
                return (cls.from_config(config) if hasattr(cls, "from_config") else cls(config)).float().eval()
        try:
            model, info = cls.from_pretrained(local, config=config, local_files_only=True, output_loading_info=True,
                                              dtype=torch.float32, ignore_mismatched_sizes=True)
        except (OSError, ValueError, RuntimeError) as e:
            raise WeightsError(f"{shown}: transformers cannot load it ({' '.join(str(e).split())[:300]})") from e
    unexpected = [key for key in info["unexpected_keys"] if not key.startswith(others)] if others else list(info["unexpected_keys"])
    problems = [f"{len(keys)} {kind} ({some_keys(sorted(map(str, keys)))})" for kind, keys in
                (("missing keys", info["missing_keys"]), ("unexpected keys", unexpected),
                 ("shapes differ", info["mismatched_keys"])) if keys]
    if problems:
        raise WeightsError(f"{shown}: its {WEIGHTS} does not fit its {CONFIG}: {'; '.join(problems)}; save the model "
                           "and its config together with save_pretrained")
    return model.eval()


def _final_linear(model: nn.Module, shown: str) -> str:
    """The dotted path of the last Linear giving one number per label: the classifier's head."""
    heads = [name for name, m in model.named_modules() if isinstance(m, nn.Linear) and m.out_features == model.config.num_labels]
    if not heads:
        raise WeightsError(f"{shown}: no Linear of {model.config.num_labels} outputs (one per label) found to be its head")
    return heads[-1]


def _names(id2label: Mapping[object, str], shown: str) -> tuple[list[str] | None, str | None]:
    """``id2label`` in index order; None when they are transformers' placeholders (LABEL_0, LABEL_1, ...)."""
    names = [id2label[index] for index in sorted(id2label, key=int)]
    if names == [f"LABEL_{i}" for i in range(len(names))]:
        return None, None
    return names, f"id2label of {shown}"


def _weights_sha256(local: str, shown: str) -> str:
    path = os.path.join(local, WEIGHTS)
    if not os.path.exists(path):
        raise WeightsError(f"{shown}: no {WEIGHTS} in the folder; save it with save_pretrained (safetensors), or pass "
                           "--weights random")
    return sha256_of(path)


@contextmanager
def _quiet() -> Iterator[None]:
    """transformers' load report and progress bars kept out of the user's terminal while a model loads."""
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        logging.enable_progress_bar()
