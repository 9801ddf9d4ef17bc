"""The classifiers ``--arch`` can name, as numbers: head, embedding size, torchvision's eval recipe.

Torch-free, so the driver can describe a model (``inference.torchvision_models``) without importing torch.
``resnet50`` (the default) is built by ``inference.resnet`` with torch alone; every other entry
is built by ``torchvision.models.get_model`` when, and only when, a job asks for it (importing
torchvision costs seconds: ResNet50's start-up never pays it).

Each recipe is that architecture's ``get_model_weights(name).DEFAULT.transforms()``, its resize
kernel included (bilinear, or bicubic for most EfficientNets; checked by tests/unit/test_archs.py).
Left out: vit_h_14, whose DEFAULT weights (SWAG, 518 px) need a network built for 518 px images,
which ``get_model(name, weights=None)`` does not build.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference.errors import WeightsError
from preprocess.recipe import IMAGENET_RECIPE, Recipe

DEFAULT_ARCH = "resnet50"


@dataclass(frozen=True)
class Arch:
    name: str  # torchvision's builder name: torchvision.models.get_model(name)
    head: str  # dotted path of the final nn.Linear; its input is the embedding (the pooled feature)
    embedding_dim: int  # the head's in_features
    recipe: Recipe  # torchvision's DEFAULT weights' eval transform
    input_size: int | None = None  # ViT: position embeddings fix the crop to exactly this size


def _resnet(name: str, dim: int, resize: int) -> Arch:
    return Arch(name, "fc", dim, Recipe(resize=resize, crop=224))


def _convnext(name: str, dim: int, resize: int) -> Arch:
    return Arch(name, "classifier.2", dim, Recipe(resize=resize, crop=224))  # LayerNorm2d, Flatten, Linear


def _efficientnet(name: str, dim: int, resize: int, crop: int, interpolation: str = "bicubic") -> Arch:
    return Arch(name, "classifier.1", dim, Recipe(resize=resize, crop=crop, interpolation=interpolation))  # Dropout, Linear


def _vit(name: str, dim: int, resize: int) -> Arch:
    return Arch(name, "heads.head", dim, Recipe(resize=resize, crop=224), input_size=224)


ARCHS: dict[str, Arch] = {arch.name: arch for arch in (
    Arch(DEFAULT_ARCH, "fc", 2048, IMAGENET_RECIPE),  # inference.resnet: no torchvision import
    _resnet("resnet18", 512, 256),
    _resnet("resnet34", 512, 256),
    _resnet("resnet101", 2048, 232),
    _resnet("resnet152", 2048, 232),
    Arch("efficientnet_v2_s", "classifier.1", 1280, Recipe(resize=384, crop=384)),  # Dropout, Linear
    Arch("efficientnet_v2_m", "classifier.1", 1280, Recipe(resize=480, crop=480)),
    _efficientnet("efficientnet_b0", 1280, 256, 224),
    _efficientnet("efficientnet_b1", 1280, 255, 240, "bilinear"),  # its DEFAULT (IMAGENET1K_V2) is bilinear
    _efficientnet("efficientnet_b2", 1408, 288, 288),
    _efficientnet("efficientnet_b3", 1536, 320, 300),
    _efficientnet("efficientnet_b4", 1792, 384, 380),
    _efficientnet("efficientnet_b5", 2048, 456, 456),
    _efficientnet("efficientnet_b6", 2304, 528, 528),
    _efficientnet("efficientnet_b7", 2560, 600, 600),
    Arch("efficientnet_v2_l", "classifier.1", 1280, Recipe(resize=480, crop=480, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                                                           interpolation="bicubic")),
    _convnext("convnext_tiny", 768, 236),
    _convnext("convnext_small", 768, 230),
    _convnext("convnext_base", 1024, 232),
    _convnext("convnext_large", 1536, 232),
    _vit("vit_b_16", 768, 256),
    _vit("vit_b_32", 768, 256),
    _vit("vit_l_16", 1024, 242),
    _vit("vit_l_32", 1024, 256),
)}


def arch_named(name: str) -> Arch:
    """The architecture called ``name``, or a WeightsError listing the ones there are."""
    try:
        return ARCHS[name]
    except KeyError:
        raise WeightsError(f"unknown architecture {name!r}; choose one of {', '.join(ARCHS)}") from None
