"""A Hugging Face image processor's config (``preprocessor_config.json``) as a Recipe: ``recipe_from_hf``. Torch-free.

What the processors do (transformers 5, both its torchvision and its PIL backend): resize with
``resample`` (PIL's integers: 2 bilinear, 3 bicubic; antialiased), to ``size`` -- the short side
(``shortest_edge``: CLIP, DINOv2's ``BitImageProcessor``) or height x width ignoring the aspect
(ViT, SigLIP: a squash) -- then, with ``do_center_crop``, a ``crop_size`` centre crop; rescale by
1/255 and normalise by ``image_mean``/``image_std``. ConvNeXt's processor resizes the short side to
``shortest_edge / crop_pct`` and crops ``shortest_edge`` (a squash to ``shortest_edge`` from 384 up).
A config these words cannot say (non-square sizes, another kernel, no resize, another rescale) is
refused in one line naming the recipe options that would say it instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from inference.errors import WeightsError
from preprocess.recipe import Recipe

RESAMPLE = {2: "bilinear", 3: "bicubic"}  # PIL.Image.Resampling's values, as a processor's "resample" saves them
RESCALE = 1 / 255
CONVNEXT_SQUASH_FROM = 384  # ConvNextImageProcessor: from this size up, no crop_pct (a squash to the size)
FIX = "pass the recipe options instead (--resize, --crop, --interpolation, --crop-mode, --mean, --std)"


def recipe_from_hf(processor: Mapping[str, object], folder: str) -> tuple[Recipe, str]:
    """The recipe a ``preprocessor_config.json`` (as a dict) describes, and where it came from."""
    kind = str(processor.get("image_processor_type") or "an image processor")
    shown = f"{folder}: {kind}"
    if not processor.get("do_resize", True):
        raise WeightsError(f"{shown} does not resize (do_resize false), and the recipe always does; {FIX}")
    rescale = processor.get("rescale_factor", RESCALE) if processor.get("do_rescale", True) else None
    if rescale is None or not math.isclose(float(rescale), RESCALE, rel_tol=1e-6):
        raise WeightsError(f"{shown} rescales pixels by {rescale} (the recipe's are scaled by 1/255); {FIX}")
    interpolation = RESAMPLE.get(processor.get("resample", 2))
    if interpolation is None:
        raise WeightsError(f"{shown} resamples with PIL kernel {processor.get('resample')!r} (the recipe has bilinear "
                           f"2 and bicubic 3); {FIX}")
    resize, crop, crop_mode = _sizes(processor, shown)
    mean, std = _colours(processor)
    # A Hugging Face processor (either backend) starts its centre crop at (h - crop) // 2, not torchvision's round.
    recipe = Recipe(resize=resize, crop=crop, mean=mean, std=std, interpolation=interpolation, crop_mode=crop_mode,
                    crop_offset="floor")
    return recipe, f"{kind} of {folder} (preprocessor_config.json)"


def _sizes(processor: Mapping[str, object], shown: str) -> tuple[int, int, str]:
    """(resize, crop, crop mode) from ``size``, ``crop_size``, ``do_center_crop`` (and ConvNeXt's ``crop_pct``)."""
    size, cropped = dict(processor.get("size") or {}), processor.get("do_center_crop", False)
    crop = _square(processor.get("crop_size"), "crop_size", shown) if cropped else None
    if set(size) == {"shortest_edge"}:
        edge = int(size["shortest_edge"])
        if "crop_pct" in processor and not cropped:  # ConvNextImageProcessor's own rule
            if edge >= CONVNEXT_SQUASH_FROM:
                return edge, edge, "squash"
            return int(edge / float(processor["crop_pct"])), edge, "center"
        if crop is None:
            raise WeightsError(f"{shown} resizes the short side to {edge} with no crop: images of other aspects would "
                               f"come out at other sizes; {FIX}")
        return edge, crop, "center"
    if set(size) == {"height", "width"}:
        side = _square(size, "size", shown)
        return side, crop or side, "squash"
    raise WeightsError(f"{shown} resizes to {size!r}; the recipe knows shortest_edge, or a square height and width; {FIX}")


def _square(size: object, key: str, shown: str) -> int:
    if not isinstance(size, Mapping) or size.get("height") != size.get("width") or not size.get("height"):
        raise WeightsError(f"{shown}: its {key} {size!r} is not a square height x width (the recipe's crops are "
                           f"squares); {FIX}")
    return int(size["height"])


def _colours(processor: Mapping[str, object]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if not processor.get("do_normalize", True):
        return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)  # no normalisation: pixels in [0, 1] as they are
    return _three(processor.get("image_mean", 0.5)), _three(processor.get("image_std", 0.5))


def _three(value: object) -> tuple[float, ...]:
    """A processor's mean or std: three numbers, or one for every channel."""
    return tuple(float(v) for v in value) if isinstance(value, (list, tuple)) else (float(value),) * 3
