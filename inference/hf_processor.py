"""A Hugging Face folder's image processor as transformers itself reads it: ``processor_draft`` (its recipe).

transformers' ``AutoImageProcessor`` reads ``preprocessor_config.json`` as the model's own pipeline does: it picks the
class by ``image_processor_type`` (a legacy ``feature_extractor_type`` too), fills what the file leaves out with that
class's defaults (MobileViT's processor has no normalisation; a ViT's ``size`` defaults to 224 x 224) and reads a
legacy ``"size": 224`` as that class does (a square for ViT, the short side for CLIP). Its settings, so resolved, are
read by ``inference.hf_recipe`` by the class's type. A class that table does not know is read as the base pipeline
only when it runs that pipeline unchanged (it overrides none of its steps: ``PIPELINE_STEPS``); otherwise it is left
unsaid, for the options to say.
"""

from __future__ import annotations

import os

from inference.errors import WeightsError
from inference.hf_folder import PROCESSOR, transformers_quiet
from inference.hf_recipe import draft_from_processor
from inference.model_recipe import RecipeDraft

# The methods of transformers' image processor backends that make the pixels: a class that overrides one has steps
# of its own, which the recipe reads only for the types inference.hf_recipe.PROCESSORS knows.
PIPELINE_STEPS = ("preprocess", "_preprocess", "_preprocess_image_like_inputs", "resize", "rescale", "normalize",
                  "rescale_and_normalize", "center_crop", "pad")
BACKEND_SUFFIXES = ("Pil", "Fast")  # transformers 5's PIL backend's class names, transformers 4's fast ones


def processor_draft(local: str, shown: str) -> RecipeDraft:
    """The recipe the local folder's image processor describes (what it cannot say left unsaid, with why)."""
    if not os.path.exists(os.path.join(local, PROCESSOR)):
        raise WeightsError(f"{shown}: no {PROCESSOR} in the folder; save the model's image processor beside it "
                           "(processor.save_pretrained)")
    import transformers

    try:
        with transformers_quiet():
            processor = transformers.AutoImageProcessor.from_pretrained(local, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise WeightsError(f"{shown}: transformers cannot read its {PROCESSOR} ({' '.join(str(e).split())[:300]}); save "
                           "the processor with save_pretrained") from e
    kind = type(processor).__name__
    for suffix in BACKEND_SUFFIXES:
        kind = kind.removesuffix(suffix)
    settings = {**processor.to_dict(), "image_processor_type": kind}
    return draft_from_processor(settings, shown, plain=_runs_the_base_pipeline(type(processor)))


def _runs_the_base_pipeline(cls: type) -> bool:
    """Whether ``cls`` is one of transformers' backends' image processors overriding none of PIPELINE_STEPS."""
    from transformers.image_processing_backends import PilBackend, TorchvisionBackend

    for klass in cls.__mro__:
        if klass in (TorchvisionBackend, PilBackend):
            return True
        if any(step in vars(klass) for step in PIPELINE_STEPS):
            return False
    return False  # not built on either backend (remote code, a processor of another kind)
