"""GPU-test fixtures: real 500x375 JPEGs, and a checkpoint whose top-1 is never a near tie.

Tolerances are derived from the precision, not guessed. Rounding to a p-bit significand has a
relative error up to u = 2^-p: TF32 (cuDNN's default for fp32 convolutions on Ampere/Hopper)
keeps 10 stored bits + 1, u = 2^-11; fp16 the same; bf16 7 + 1, u = 2^-8.

The checkpoint (written here) has its residual branches off (every bottleneck's last BN scale 0,
torchvision's ``zero_init_residual``): the signal passes conv1 and the 4 projection convs, then the
classifier; 6 roundings adding in quadrature give sqrt(6) u ~ 2.5 u, so ``ERROR_ULPS = 3``. A random
full-depth trunk maps every image to nearly one feature vector (cosine 0.9995), so any classifier
separating them cancels huge terms and no precision keeps a margin: near ties, seen on an H100.
The classifier is the pseudo-inverse of the 16 images' features: image i's logit i is TOP_LOGIT,
the others 0. A logit's rounding error is bounded the classic way for a dot product,
ERROR_ULPS u sum_k |w_jk f_ik|; softmax moves a probability by at most twice the largest logit error.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from inference import load_model
from preprocess.recipe import IMAGENET_RECIPE
from preprocess import preprocess_batch
from tests.common.images import encoded, photo

UNIT_ROUNDOFF = {"fp32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}  # fp32 = TF32 on the GPU
ERROR_ULPS = 3  # sqrt(6 roundings on the signal's path) ~ 2.45, rounded up
TOP_LOGIT = 6.0  # scores ~0.3-0.4 against 999 zero logits: far from saturated


def logit_error_bound(precision: str, abs_dot: np.ndarray) -> np.ndarray:
    """(N,) per image: the largest error any of its logits can have at ``precision``."""
    return ERROR_ULPS * UNIT_ROUNDOFF[precision] * abs_dot


@pytest.fixture(scope="session")
def jpegs() -> list[bytes]:
    return [encoded(photo(500, 375, seed=s)) for s in range(16)]


@pytest.fixture(scope="session")
def pixels(jpegs) -> np.ndarray:
    return preprocess_batch(jpegs, IMAGENET_RECIPE).pixels  # (16, 224, 224, 3) uint8


@pytest.fixture(scope="session")
def clear_winner(tmp_path_factory, pixels) -> tuple[str, np.ndarray, np.ndarray]:
    """(checkpoint path, CPU fp32 logits (16, 1000), per-image sum_k |w_jk f_ik| max over j (16,))."""
    module = load_model("random").module
    for name, layer in module.named_modules():
        if name.endswith("bn3"):
            layer.weight.data.zero_()  # residual branch off: the block passes its input on
    features = _trunk_features(module, pixels)  # (16, 2048)
    weight = torch.zeros(1000, features.shape[1])
    weight[: len(pixels)] = torch.linalg.pinv(features).T * TOP_LOGIT  # features @ weight.T = TOP_LOGIT * I
    module.fc.weight.data, module.fc.bias.data = weight, torch.zeros(1000)
    path = tmp_path_factory.mktemp("weights") / "clear-winner.pt"
    torch.save(module.state_dict(), path)
    abs_dot = (features.abs() @ weight.abs().T).max(dim=1).values  # (16,)
    return str(path), _forward(module, pixels).numpy(), abs_dot.numpy()


def _trunk_features(module: torch.nn.Module, pixels: np.ndarray) -> torch.Tensor:
    trunk = copy.deepcopy(module)
    trunk.fc = torch.nn.Identity()
    return _forward(trunk, pixels)  # (N, 2048) pooled features


def _forward(module: torch.nn.Module, pixels: np.ndarray) -> torch.Tensor:
    """CPU fp32 forward, normalised as the Predictor does."""
    mean = torch.tensor(IMAGENET_RECIPE.mean).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGENET_RECIPE.std).view(1, 3, 1, 1) * 255
    batch = (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() - mean) / std
    with torch.inference_mode():
        return module.eval()(batch)
