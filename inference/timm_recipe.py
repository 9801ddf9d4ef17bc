"""timm's eval transform as a recipe: ``recipe_from_timm(resolve_data_config({}, model=m), name)``. Torch-free.

timm's ``transforms_imagenet_eval`` as numbers: resize ``floor(size / crop_pct)``, crop ``size``, centre or squash,
with its kernel, mean and std. What it asks and the recipe has no form for (a non-square input, timm's ``border``
crop, another kernel) is left unsaid, for the options to say (``inference.model_recipe``). A timm model
(``inference.timm_models``) and a pickled timm model logged to MLflow with no recipe (``inference.mlflow_models``)
both take theirs from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from inference.model_recipe import RecipeDraft

TIMM_CROP_MODES = ("center", "squash")  # timm's "border" pads: no recipe of ours
TIMM_INTERPOLATIONS = ("bilinear", "bicubic")


def recipe_from_timm(data_config: Mapping[str, object], name: str) -> RecipeDraft:
    """timm's eval transform (``resolve_data_config``'s dict) as a recipe; what it cannot say left to the options."""
    _, height, width = data_config["input_size"]
    crop_mode = data_config.get("crop_mode") or "center"
    interpolation = data_config.get("interpolation") or "bilinear"
    crop_pct = float(data_config.get("crop_pct") or 0.875)  # timm's DEFAULT_CROP_PCT
    said = {"resize": math.floor(height / crop_pct), "crop": height, "mean": tuple(data_config["mean"]),
            "std": tuple(data_config["std"]), "interpolation": interpolation, "crop_mode": crop_mode}
    why = "its pretrained_cfg asks for {}, which the recipe has no form for"
    unsaid = {**(dict.fromkeys(("resize", "crop"), why.format(f"a {height}x{width} input (the recipe crops squares)"))
                 if height != width else {}),
              **({"crop_mode": why.format(f"crop_mode {crop_mode!r}")} if crop_mode not in TIMM_CROP_MODES else {}),
              **({"interpolation": why.format(f"interpolation {interpolation!r}")}
                 if interpolation not in TIMM_INTERPOLATIONS else {})}
    return RecipeDraft(f"timm's {name} pretrained_cfg (resolve_data_config: crop_pct {crop_pct:g})",
                       {key: value for key, value in said.items() if key not in unsaid}, unsaid)
