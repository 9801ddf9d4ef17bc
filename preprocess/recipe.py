"""The eval recipe: how a model wants its pixels (resize kernel and size, crop or squash, mean, std). Its one home.

Use ``Recipe`` wherever pixels are made or normalised: the CPU workers resize and crop with
it (``preprocess.transform``), the device stage does the same (``preprocess.device_resize``),
and the predictor normalises with its mean and std (``inference.predictor``). The driver
decides one recipe per job (``inference.describe_model``: the user's overrides, else the
checkpoint's, else the architecture's torchvision default) and every stage reads that one.

``recipe.updated({"crop": 384}, "--recipe")`` applies a partial change (any subset of the
fields, as a user, a checkpoint or a model's own config writes it) and refuses bad values naming
where they came from.

Every recipe resamples antialiased, as every reference it stands for does on a PIL image
(torchvision's weights' ``transforms()``, timm's eval transform, Hugging Face image processors).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

RGB = tuple[float, float, float]
# The resize kernel, as torchvision's InterpolationMode names it (timm's "bilinear"/"bicubic", a Hugging Face
# processor's ``resample`` 2/3). Pillow's kernels: bicubic is a = -0.5, antialiased when shrinking.
INTERPOLATIONS = ("bilinear", "bicubic")
# center: the short side to ``resize`` (aspect kept), then a ``crop`` square from the centre (torchvision, timm's
# "center", CLIP, DINOv2). squash: both sides to ``resize`` (aspect not kept), then the centre ``crop`` (timm's
# "squash"; a Hugging Face ViT or SigLIP processor's height x width resize with no crop is resize == crop).
CROP_MODES = ("center", "squash")
# Where the centre crop starts when the resized side exceeds the crop by an odd number of pixels: round
# ((h - crop) / 2 rounded half to even: torchvision's CenterCrop, timm's, Hugging Face's torchvision-backed "fast"
# processors) or floor ((h - crop) // 2: Hugging Face's PIL-backed processors' center_crop, e.g. CLIP's).
CROP_OFFSETS = ("round", "floor")
# The order of the channels the model takes: rgb (nearly every model), or bgr (a Hugging Face MobileViT processor's
# do_flip_channel_order). Pixels are normalised in R, G, B order (``mean`` and ``std`` are R, G, B), then flipped.
CHANNEL_ORDERS = ("rgb", "bgr")


@dataclass(frozen=True)
class Recipe:
    """A model's eval transform as numbers: Resize(resize, interpolation) + CenterCrop(crop) + Normalize(mean, std),
    the resize keeping the aspect (``crop_mode`` center) or not (squash), the crop's start rounded (``crop_offset``),
    the channels in the order the model takes them (``channel_order``)."""

    resize: int = 232  # short side after resize; ResNet50_Weights.IMAGENET1K_V2 uses 232 (V1: 256)
    crop: int = 224  # square centre crop fed to the network
    mean: RGB = (0.485, 0.456, 0.406)  # per channel, of pixels scaled to [0, 1]: ImageNet's
    std: RGB = (0.229, 0.224, 0.225)
    interpolation: str = "bilinear"  # INTERPOLATIONS: torchvision's ResNet50 weights are bilinear, most timm ones bicubic
    crop_mode: str = "center"  # CROP_MODES: center keeps the aspect; squash resizes both sides to ``resize``
    crop_offset: str = "round"  # CROP_OFFSETS: torchvision's rounding of the crop's start; floor: HF's PIL processors
    channel_order: str = "rgb"  # CHANNEL_ORDERS: what the model takes, after normalising; bgr: MobileViT's processor

    def __post_init__(self) -> None:
        for name in ("resize", "crop"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"the recipe's {name} must be a positive whole number of pixels, got {value!r}")
        if self.crop > self.resize:
            raise ValueError(f"the recipe needs crop <= resize (the crop is cut from the resized image), "
                             f"got crop={self.crop}, resize={self.resize}")
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(f"the recipe's interpolation must be one of {', '.join(INTERPOLATIONS)}, got {self.interpolation!r}")
        if self.crop_mode not in CROP_MODES:
            raise ValueError(f"the recipe's crop_mode must be one of {', '.join(CROP_MODES)}, got {self.crop_mode!r}")
        if self.crop_offset not in CROP_OFFSETS:
            raise ValueError(f"the recipe's crop_offset must be one of {', '.join(CROP_OFFSETS)}, got {self.crop_offset!r}")
        if self.channel_order not in CHANNEL_ORDERS:
            raise ValueError(f"the recipe's channel_order must be one of {', '.join(CHANNEL_ORDERS)}, got {self.channel_order!r}")
        object.__setattr__(self, "mean", _channels("mean", self.mean, positive=False))
        object.__setattr__(self, "std", _channels("std", self.std, positive=True))

    def updated(self, changes: Mapping[str, object], source: str) -> Recipe:
        """This recipe with ``changes`` (any subset of its fields) applied and checked.

        ``source`` names where the changes came from (an option, a checkpoint) in the error.
        """
        unknown = sorted(repr(key) for key in changes if key not in {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"{source}: unknown recipe key(s) {', '.join(unknown)}; "
                             f"a recipe has {', '.join(f.name for f in fields(self))}")
        try:
            return replace(self, **changes)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from e

    def to_dict(self) -> dict:
        """As the manifest and part footers record it (JSON lists, not tuples)."""
        return {"resize": self.resize, "crop": self.crop, "mean": list(self.mean), "std": list(self.std),
                "interpolation": self.interpolation, "crop_mode": self.crop_mode, "crop_offset": self.crop_offset,
                "channel_order": self.channel_order}


def _channels(name: str, values: object, *, positive: bool) -> RGB:
    """Three finite numbers in [0, 1] (``positive``: above 0), of pixels scaled to [0, 1]."""
    try:
        numbers = () if isinstance(values, (str, bytes)) else tuple(float(v) for v in values)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != 3 or not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"the recipe's {name} must be 3 numbers (R, G, B), got {values!r}")
    if max(numbers) > 1 or min(numbers) < 0 or (positive and min(numbers) == 0):
        bound = "in (0, 1]" if positive else "in [0, 1]"
        hint = "; divide by 255 (mean and std are of pixels scaled to [0, 1])" if max(numbers) > 1 else ""
        raise ValueError(f"the recipe's {name} must be {bound} per channel, got {values!r}{hint}")
    return numbers


# torchvision's ResNet50_Weights.DEFAULT (IMAGENET1K_V2): the recipe a job uses unless told otherwise.
IMAGENET_RECIPE = Recipe()
