"""What a Hugging Face folder holds, by its ``config.json``: a classifier, an embedder, or a refusal naming the class.

Use ``what_it_holds`` before anything else is read from the folder (``inference.hf_models``): a text or audio
model is refused as not an image model before the job asks for an image processor it never had.
- a classifier: a class ``AutoModelForImageClassification`` loads for its ``model_type`` (transformers' own table,
  the distilled ``DeiTForImageClassificationWithTeacher`` and ``LevitForImageClassificationWithTeacher`` among them);
  read as ``module(pixels) -> logits`` (``Logits``);
- an embedder of ``TOWERS``: the vision tower of CLIP or SigLIP, from the tower's own folder or a whole CLIP/SigLIP
  folder (its text side left unread), or DINOv2; its embedding as the table says (``Embedding``);
- any other image model (a detector, a segmenter, a backbone without a head) is refused naming its class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from inference.errors import WeightsError

CLIP_EMBEDS = "CLIP's image embedding: the vision tower's pooled output through its projection, L2-normalised"
SIGLIP_EMBEDS = "SigLIP's image embedding: the vision tower's attention-pooled output, L2-normalised"
CLASSIFIER = "classifier"  # what_it_holds for a class AutoModelForImageClassification loads


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


def what_it_holds(config: Mapping[str, object], shown: str) -> Tower | str:
    """The folder's embedder (a ``Tower``) or ``CLASSIFIER``; WeightsError naming the class for anything else."""
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES

    architecture = (config.get("architectures") or [None])[0]
    model_type = config.get("model_type")
    if architecture in TOWERS:
        return TOWERS[architecture]
    classifiers = MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES.get(model_type) or ()
    if architecture in ((classifiers,) if isinstance(classifiers, str) else classifiers):
        return CLASSIFIER
    if model_type not in IMAGE_PROCESSOR_MAPPING_NAMES and model_type not in MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES:
        raise WeightsError(f"{shown} holds a {architecture} (model_type {model_type!r}), not an image model; hf: takes "
                           "an image classifier or an image embedder")
    if architecture is None:
        raise WeightsError(f"{shown}: its config.json names no architectures; save the model with save_pretrained")
    raise WeightsError(f"{shown} holds a {architecture}: neither an image classifier (a class "
                       f"AutoModelForImageClassification loads) nor an embedder this job reads ({', '.join(TOWERS)})")


class Logits(nn.Module):
    """An ``AutoModelForImageClassification`` as ``module(pixels) -> logits``: (N, 3, H, W) -> (N, classes)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=x).logits


def logits_of(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A classifier's logits (or, with its heads in slots, their inputs side by side: ``inference.heads``)."""
    return model(pixel_values=x).logits


class Embedding(nn.Module):
    """A tower as ``module(pixels) -> embedding``: (N, 3, H, W) -> (N, D), L2-normalised when the model's is."""

    def __init__(self, model: nn.Module, output: str, normalised: bool) -> None:
        super().__init__()
        self.model, self.output, self.normalised = model, output, normalised

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        embedding = getattr(self.model(pixel_values=x), self.output)
        return nn.functional.normalize(embedding, dim=-1) if self.normalised else embedding
