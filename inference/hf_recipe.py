"""A Hugging Face image processor as a recipe: ``draft_from_processor``, by the processor's type. Torch-free.

The processor's settings come resolved (``inference.hf_processor``: transformers' own reading of
``preprocessor_config.json``, its class defaults filled in and a legacy ``"size": 224`` read as that class reads it).
Its type decides which steps apply (``PROCESSORS``, a table like transformers' own ``AutoImageProcessor`` mapping):
- every type: resize with ``resample`` (PIL's integers: 2 bilinear, 3 bicubic) to ``size`` -- the short side
  (``shortest_edge``) or a square height x width ignoring the aspect (a squash) -- then, with ``do_center_crop``, a
  square ``crop_size`` centre crop started at ``(h - crop) // 2``; rescale and normalise, each only when the processor
  does (``do_rescale``, ``do_normalize``: MobileViT's has no normalisation);
- ConvNeXt: the short side to ``int(shortest_edge / crop_pct)``, cropped to ``shortest_edge`` (from 384 up, a squash);
- PoolFormer: the short side to ``int(size / crop_pct)``, then the crop; LeViT: to ``int(256 / 224 * shortest_edge)``;
- MobileViT: RGB flipped to BGR (``do_flip_channel_order``); EfficientNet: ``include_top`` divides by the std again,
  ``rescale_offset`` takes 1 off after the rescale.
A rescale and normalisation of any factor and offset is one ``(x / 255 - mean) / std`` (``_colours``). What the
recipe cannot say (another kernel, a non-square size, a crop larger than the resize, no resize, an unknown type
whose steps it does not read) is left unsaid with why: the options must say it (``inference.model_recipe``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inference.model_recipe import RecipeDraft

RESAMPLE = {2: "bilinear", 3: "bicubic"}  # PIL.Image.Resampling's values, as a processor's "resample" saves them
KERNELS = {0: "nearest", 1: "lanczos", 4: "box", 5: "hamming"}  # the others, named in a refusal
RESCALE = 1 / 255
CONVNEXT_SQUASH_FROM = 384  # ConvNextImageProcessor: from this size up, no crop_pct (a squash to the size)
LEVIT_RESIZE = 256 / 224  # LevitImageProcessor: the short side to int(this * shortest_edge), then the crop
SIZES = ("resize", "crop", "crop_mode")
OPTION_FIELDS = ("resize", "crop", "mean", "std", "interpolation", "crop_mode")  # what the options can say
DIGITS = 12  # a mean or std rounded so 1/255 * 255 reads as 1


@dataclass(frozen=True)
class Steps:
    """What a processor type does beyond resize, centre crop, rescale and normalise, as the recipe reads it."""

    resize: str = "size"  # how it reads ``size`` (RESIZES): the base rule, or its own
    flips: bool = False  # honours do_flip_channel_order: RGB -> BGR after the rest (MobileViT)
    include_top: bool = False  # honours include_top (the std applied twice) and rescale_offset (EfficientNet)


BASE = Steps()
PROCESSORS: dict[str, Steps] = {  # by image processor class, as transformers 5 names its default (torchvision) backend
    "ViTImageProcessor": BASE, "DeiTImageProcessor": BASE, "BeitImageProcessor": BASE, "CLIPImageProcessor": BASE,
    "SiglipImageProcessor": BASE, "BitImageProcessor": BASE, "MobileNetV1ImageProcessor": BASE,
    "MobileNetV2ImageProcessor": BASE,
    "ConvNextImageProcessor": Steps(resize="convnext"),
    "PoolFormerImageProcessor": Steps(resize="crop_pct"),
    "LevitImageProcessor": Steps(resize="levit"),
    "MobileViTImageProcessor": Steps(flips=True),
    "EfficientNetImageProcessor": Steps(include_top=True),
}
Said = tuple[dict[str, object], dict[str, str]]  # (recipe fields said, recipe field -> why it cannot be said)


def draft_from_processor(settings: Mapping[str, object], folder: str, plain: bool = False) -> RecipeDraft:
    """The recipe ``settings`` (an image processor's, resolved) describe. ``plain``: a type not in PROCESSORS whose
    class runs the base pipeline unchanged (no step of its own), read as BASE."""
    kind = str(settings.get("image_processor_type") or "an image processor")
    source = f"{kind} of {folder} (preprocessor_config.json)"
    steps = PROCESSORS.get(kind, BASE if plain else None)
    if steps is None:
        why = f"{kind} is a processor type whose own steps the recipe does not read (docs/model.md lists the types it does)"
        return RecipeDraft(source, {"crop_offset": "floor"}, dict.fromkeys(OPTION_FIELDS, why))
    parts = [_sizes(settings, steps), _interpolation(settings), _colours(settings, steps)]
    flipped = steps.flips and settings.get("do_flip_channel_order")
    said = {"crop_offset": "floor", "channel_order": "bgr" if flipped else "rgb"}
    unsaid = {}
    for fields, why in parts:
        said.update(fields)
        unsaid.update(why)
    return RecipeDraft(source, said, unsaid)


def _interpolation(settings: Mapping[str, object]) -> Said:
    resample = int(settings.get("resample") if settings.get("resample") is not None else 2)  # None: bilinear
    if resample in RESAMPLE:
        return {"interpolation": RESAMPLE[resample]}, {}
    named = KERNELS.get(resample, "unknown")
    return {}, {"interpolation": f"it resamples with PIL kernel {resample} ({named}), where the recipe has bilinear and "
                                                    "bicubic"}


def _sizes(settings: Mapping[str, object], steps: Steps) -> Said:
    """(resize, crop, crop mode) by the type's resize rule, after what every type refuses alike."""
    if not settings.get("do_resize", True):
        return {}, dict.fromkeys(SIZES, "it does not resize (do_resize false), and the recipe always does")
    if settings.get("do_pad"):
        return {}, dict.fromkeys(SIZES, "it pads the images (do_pad), which the recipe does not")
    size = {key: value for key, value in dict(settings.get("size") or {}).items() if value is not None}
    return RESIZES[steps.resize](settings, size)


def _crop(settings: Mapping[str, object]) -> tuple[int | None, str | None]:
    """(the square centre crop or None for none, why it cannot be said)."""
    if not settings.get("do_center_crop"):
        return None, None
    crop = dict(settings.get("crop_size") or {})
    if not crop.get("height") or crop.get("height") != crop.get("width"):
        return None, f"it crops {crop!r}, not a square (the recipe's crops are squares)"
    return int(crop["height"]), None


def _cropped(resize: int, crop_mode: str, settings: Mapping[str, object], resized: str) -> Said:
    """``resize`` (``resized`` says how the processor got there) and the processor's crop of it, or why not."""
    crop, bad = _crop(settings)
    if bad is not None:
        return {"resize": resize, "crop_mode": crop_mode}, {"crop": bad}
    if crop is None and crop_mode == "center":
        return {"resize": resize, "crop_mode": crop_mode}, {"crop": f"it resizes {resized} with no crop (images of other "
                                                                    "aspects come out at other sizes)"}
    crop = resize if crop is None else crop
    if crop > resize:
        why = f"it crops {crop} from {resized} (the processor pads the rest with black)"
        return {"crop_mode": crop_mode}, {"resize": why, "crop": why}
    return {"resize": resize, "crop": crop, "crop_mode": crop_mode}, {}


def _size_rule(settings: Mapping[str, object], size: dict, edge_scale: Callable[[int], int] | None = None) -> Said:
    """The base rule: the short side to ``shortest_edge`` (scaled by ``edge_scale``: LeViT's), or a square squash."""
    if set(size) == {"shortest_edge"}:
        edge = int(size["shortest_edge"])
        resize = edge_scale(edge) if edge_scale else edge
        return _cropped(resize, "center", settings, f"the short side to {resize}")
    if set(size) == {"height", "width"} and size["height"] == size["width"]:
        return _cropped(int(size["height"]), "squash", settings, f"a {size['height']} square")
    return {}, dict.fromkeys(("resize", "crop"), f"it resizes to {size!r}; the recipe resizes the short side, or to a "
                                                 "square height x width")


def _levit(settings: Mapping[str, object], size: dict) -> Said:
    return _size_rule(settings, size, lambda edge: int(LEVIT_RESIZE * edge))


def _crop_pct(settings: Mapping[str, object], size: dict) -> Said:
    """PoolFormer's: with ``crop_pct``, the short side to ``int(size / crop_pct)`` (its shortest_edge, or a square's
    side: the aspect kept either way), then the crop; without, the base rule."""
    crop_pct = settings.get("crop_pct")
    side = size.get("shortest_edge") or (size.get("height") if size.get("height") == size.get("width") else None)
    if crop_pct is None or not side or set(size) - {"shortest_edge", "height", "width"}:
        return _size_rule(settings, size)
    resize = int(int(side) / float(crop_pct))
    return _cropped(resize, "center", settings, f"the short side to {resize} (size / crop_pct)")


def _convnext(settings: Mapping[str, object], size: dict) -> Said:
    """ConvNeXt's: below 384, the short side to ``int(shortest_edge / crop_pct)`` and a ``shortest_edge`` crop; from
    384 up, a squash to ``shortest_edge``."""
    if set(size) != {"shortest_edge"}:
        return {}, dict.fromkeys(SIZES, f"it resizes to {size!r}, where ConvNextImageProcessor reads shortest_edge")
    if settings.get("do_center_crop"):
        return {}, dict.fromkeys(("resize", "crop"), "it crops twice (crop_pct, then crop_size)")
    edge = int(size["shortest_edge"])
    if edge >= CONVNEXT_SQUASH_FROM:
        return {"resize": edge, "crop": edge, "crop_mode": "squash"}, {}
    return {"resize": int(edge / float(settings.get("crop_pct") or 224 / 256)), "crop": edge, "crop_mode": "center"}, {}


RESIZES: dict[str, Callable[[Mapping[str, object], dict], Said]] = {
    "size": _size_rule, "convnext": _convnext, "crop_pct": _crop_pct, "levit": _levit,
}


def _colours(settings: Mapping[str, object], steps: Steps) -> Said:
    """mean and std such that ``(x / 255 - mean) / std`` is what the processor feeds the model, for pixels x in 0..255:
    its rescale (``x * factor``, less 1 with EfficientNet's ``rescale_offset``), its normalisation when it has one, and
    EfficientNet's ``include_top`` (a second division by the std)."""
    rescales = bool(settings.get("do_rescale", True))
    factor = float(settings.get("rescale_factor") or RESCALE) if rescales else 1.0
    offset = -1.0 if steps.include_top and rescales and settings.get("rescale_offset") else 0.0
    normalises = bool(settings.get("do_normalize"))
    mean = _three(settings.get("image_mean", 0.5)) if normalises else (0.0,) * 3
    std = _three(settings.get("image_std", 0.5)) if normalises else (1.0,) * 3
    again = _three(settings.get("image_std", 0.5)) if steps.include_top and settings.get("include_top") else (1.0,) * 3
    said = {"mean": tuple(round((m - offset) / (255 * factor), DIGITS) for m in mean),
            "std": tuple(round(s * t / (255 * factor), DIGITS) for s, t in zip(std, again))}
    if all(0 <= m <= 1 for m in said["mean"]) and all(0 < s <= 1 for s in said["std"]):
        return said, {}
    why = (f"its rescale (factor {factor:g}{', offset -1' if offset else ''}) and normalisation feed the model values no "
           "mean and std in [0, 1] of pixels scaled to [0, 1] can say")
    return {}, dict.fromkeys(("mean", "std"), why)


def _three(value: object) -> tuple[float, ...]:
    """A processor's mean or std: three numbers, or one for every channel."""
    return tuple(float(v) for v in value) if isinstance(value, (list, tuple)) else (float(value),) * 3
