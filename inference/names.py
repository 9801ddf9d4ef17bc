"""The names a command line needs from ``inference`` without loading torch: precisions, the weights error.

Use it from code that runs where torch is not wanted (argument parsing, the CPU stage's
processes); everything that computes lives in the torch-bound modules beside it.
"""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16")
RANDOM_WEIGHTS = "random"  # --weights random: seeded, the same in every process (inference.model)
IMAGENET_WEIGHTS = "imagenet"  # --weights imagenet: torchvision's ImageNet weights for the architecture
# Embeddings (the pooled feature) as the host receives them; float16 halves the bytes a row writes.
EmbeddingDtype = Literal["float16", "float32"]
EMBEDDING_DTYPES: tuple[EmbeddingDtype, ...] = ("float16", "float32")


class WeightsError(RuntimeError):
    """The requested weights, names or recipe cannot be used; the message names the value and the fix."""
