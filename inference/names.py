"""The names a command line needs from ``inference`` without loading torch: precisions, the weights error.

Use it from code that runs where torch is not wanted (argument parsing, the CPU stage's
processes); everything that computes lives in the torch-bound modules beside it.
"""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16")
RANDOM_WEIGHTS = "random"  # --weights random: seeded, the same in every process (inference.model)


class WeightsError(RuntimeError):
    """The requested weights could not be loaded; the message names the fix."""
