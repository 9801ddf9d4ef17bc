"""The eval recipe: how a model wants its pixels (resize, centre crop, mean, std). Its one home.

Use ``Recipe`` wherever pixels are made or normalised: the CPU workers resize and crop with
it (``preprocess.transform``), the device stage does the same (``preprocess.device_resize``),
and the predictor normalises with its mean and std (``inference.predictor``). The driver
decides one recipe per job (the model's, or the user's) and every stage reads that one.
"""

from __future__ import annotations

from dataclasses import dataclass

RGB = tuple[float, float, float]


@dataclass(frozen=True)
class Recipe:
    """torchvision's eval transform as numbers: Resize(resize) + CenterCrop(crop) + Normalize(mean, std)."""

    resize: int = 232  # short side after resize; ResNet50_Weights.IMAGENET1K_V2 uses 232 (V1: 256)
    crop: int = 224  # square centre crop fed to the network
    mean: RGB = (0.485, 0.456, 0.406)  # per channel, of pixels scaled to [0, 1]: ImageNet's
    std: RGB = (0.229, 0.224, 0.225)

    def __post_init__(self) -> None:
        if not 0 < self.crop <= self.resize:
            raise ValueError(f"the recipe needs 0 < crop <= resize, got crop={self.crop}, resize={self.resize}")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"the recipe needs 3 means and 3 positive stds, got mean={self.mean}, std={self.std}")

    def to_dict(self) -> dict:
        """As the manifest and part footers record it (JSON lists, not tuples)."""
        return {"resize": self.resize, "crop": self.crop, "mean": list(self.mean), "std": list(self.std)}


# torchvision's ResNet50_Weights.DEFAULT (IMAGENET1K_V2): the recipe a job uses unless told otherwise.
IMAGENET_RECIPE = Recipe()
