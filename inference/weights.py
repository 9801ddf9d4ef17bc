"""The tensors a ``--weights`` value names, read once per process: ``weights_for(weights, arch, s3_endpoint_url)``.

What ``--weights`` can name:
- ``imagenet``: torchvision's ImageNet weights for the architecture (ResNet50: ``IMAGENET_URL``,
  IMAGENET1K_V2), downloaded and cached as torchvision does (``TORCH_HOME``, hash checked);
- ``random``: seeded random initialisation, identical in every process, for throughput runs;
- ``own``: the weights a model's source holds itself (a Hugging Face folder's, an MLflow model's), read by that source;
- a user's checkpoint, path or ``s3://`` URI (``inference.checkpoint``: layouts, prefixes,
  ``weights_only=True``).
When the weights cannot be had, ``WeightsError`` says so; there is no fallback.

Both the driver's description (``inference.torchvision_models``) and every worker's ``load_model`` come here,
so a process reads a file or downloads once however often it asks. Importing this module does
not import torch: the driver describes ``random`` weights, and names the choices, without it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from inference.archs import DEFAULT_ARCH, Arch, arch_named
from inference.errors import WeightsError

if TYPE_CHECKING:
    import torch

    from inference.checkpoint import Checkpoint

RANDOM_WEIGHTS = "random"  # --weights random: seeded, the same in every process
IMAGENET_WEIGHTS = "imagenet"  # --weights imagenet: torchvision's ImageNet weights for the architecture
OWN_WEIGHTS = "own"  # --weights own: what the source holds itself (an HF folder's model.safetensors, an MLflow model's)
NAMED_WEIGHTS = (IMAGENET_WEIGHTS, RANDOM_WEIGHTS, OWN_WEIGHTS)  # every other --weights value names a checkpoint file
# Every process building ``random`` weights gets the same ones, so engines can be compared row by row.
RANDOM_WEIGHTS_SEED = 0
# torchvision's ResNet50_Weights.IMAGENET1K_V2 (= DEFAULT); its eval recipe is preprocess.recipe's
# IMAGENET_RECIPE. Fetched without torchvision, which the other architectures' weights need.
IMAGENET_URL = "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"


@functools.lru_cache(maxsize=4)
def weights_for(weights: str, arch: str, s3_endpoint_url: str | None) -> Checkpoint:
    """The weights (CPU tensors) and the metadata saved with them, read once per process."""
    from inference.checkpoint import Checkpoint, read_checkpoint  # torch: from the first read on

    if weights == IMAGENET_WEIGHTS:
        return Checkpoint(_imagenet(arch_named(arch)), None, None, None)
    if weights == RANDOM_WEIGHTS:
        return Checkpoint(_random(arch_named(arch)), None, None, None)
    return read_checkpoint(weights, s3_endpoint_url)


def clear_weights_cache() -> None:
    """Forget every state dict read so far (tests; a process that must re-read a changed file)."""
    weights_for.cache_clear()


def _random(arch: Arch) -> dict[str, torch.Tensor]:
    import torch

    from inference.build import build

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_WEIGHTS_SEED)
        return build(arch).state_dict()


def _imagenet(arch: Arch) -> dict[str, torch.Tensor]:
    import torch

    try:
        if arch.name == DEFAULT_ARCH:
            return torch.hub.load_state_dict_from_url(IMAGENET_URL, progress=False, check_hash=True, weights_only=True)
        from torchvision.models import get_model_weights  # the other architectures: torchvision's own table

        return get_model_weights(arch.name).DEFAULT.get_state_dict(progress=False, check_hash=True, weights_only=True)
    except (OSError, RuntimeError) as e:  # URLError is an OSError; a bad cache file a RuntimeError
        raise WeightsError(
            f"cannot get torchvision's {arch.name} ImageNet weights ({' '.join(str(e).split())}); on a machine "
            "without network, put them in the torch cache (TORCH_HOME) or pass --weights PATH, or use "
            "--weights random for a throughput run"
        ) from e
