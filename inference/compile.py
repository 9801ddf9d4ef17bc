"""When to ``torch.compile`` the model, how, and where its compiled kernels are kept between runs.

``--compile on|off|auto``: the driver's plan (``job.execution.decide``) turns it into a yes or
no; ``auto`` asks ``compile_by_size``. ``compile_model`` compiles (the ``Predictor`` does it when
given ``compile=True``). Importing this module does not import torch: the driver decides
before it has any need of torch.

The size rule (``auto``): compile on a GPU when the job has at least
``COMPILE_BREAK_EVEN_IMAGES`` images, the point where the time compiled batches save has repaid
the compile time. On CPU, never: inductor's C++ build takes minutes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

# on: always; off: never (eager); auto: by the job's size (compile_by_size).
COMPILE_CHOICES = ("on", "off", "auto")

# The break-even below rests on these: one H100 80GB, ResNet50 bf16 channels_last, batch 256 (2026-11).
EAGER_IMAGES_PER_SEC = 12_800
COMPILED_IMAGES_PER_SEC = 21_300  # mode "default" and "reduce-overhead" alike
COMPILE_SECONDS = 12.0  # first compiled calls took 9-16 s with a cold cache
# Break-even: the compile time over the time saved per image,
# 12 s / (1/12,800 - 1/21,300 s) = 12 s / 31.2 us ~ 385,000 images (about 30 s of eager work).
# A warm cache (below) makes later compiles cheaper, so this errs towards eager.
COMPILE_BREAK_EVEN_IMAGES = round(COMPILE_SECONDS / (1 / EAGER_IMAGES_PER_SEC - 1 / COMPILED_IMAGES_PER_SEC))

# "default", not "reduce-overhead" (CUDA graphs): at batch 256 a ResNet50 batch is ~12 ms of
# device work against ~1 ms of kernel launches issued ahead of it, so graphs measured no faster,
# and CUDA-graph trees keep static buffers per thread that the two predictor threads would share
# badly. Graphs pay for small batches (tens of images); pass mode="reduce-overhead" there.
DEFAULT_COMPILE_MODE = "default"

# Inductor's default cache lives in /tmp/torchinductor_<user>, gone with the container; a stable
# directory keeps the FX graph cache (and the Triton kernels bundled into it) between runs.
CACHE_DIR_ENV = "TORCHINDUCTOR_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/batch-inference/inductor")


def compile_by_size(images: int, device_kind: str) -> bool:
    """``--compile auto``: GPU jobs of at least the break-even size compile; others run eager."""
    return device_kind == "cuda" and images >= COMPILE_BREAK_EVEN_IMAGES


def compile_model(module: nn.Module, mode: str = DEFAULT_COMPILE_MODE) -> nn.Module:
    """``torch.compile(module, mode=mode)`` with the compile cache in a directory that persists."""
    import torch

    use_persistent_cache()
    return torch.compile(module, mode=mode)


def use_persistent_cache(directory: Path | None = None) -> Path:
    """Point inductor's caches at ``directory`` (default ``~/.cache/batch-inference/inductor``).

    A ``TORCHINDUCTOR_CACHE_DIR`` the user already set is kept. Inductor reads the variable when
    it first compiles, so call this before any compile in the process.
    """
    if CACHE_DIR_ENV not in os.environ or directory is not None:
        chosen = (directory or DEFAULT_CACHE_DIR).expanduser()
        chosen.mkdir(parents=True, exist_ok=True)
        os.environ[CACHE_DIR_ENV] = str(chosen)
    import torch._inductor.config as inductor_config  # torch._inductor: only when compiling

    inductor_config.fx_graph_cache = True  # the default since torch 2.4; a job must not run without it
    return Path(os.environ[CACHE_DIR_ENV])
