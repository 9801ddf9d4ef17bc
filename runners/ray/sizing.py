"""How much memory each pool actor tells Ray it needs, and how many actors the cluster's memory holds.

Pure arithmetic (no Ray): ``runners.ray.cluster.plan_scaling`` feeds it the cluster's ``memory``
resource. Each actor declares its estimate (``map_batches(memory=...)``, Ray's logical memory
resource), so Ray places no more actors on a node than its memory holds, rather than starting
them and leaving the node's memory monitor to kill them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from job.errors import JobError

MB = 1024 * 1024
# A decoder actor's interpreter, Ray's worker, pyarrow and Pillow: 230 MB of RSS measured at its peak on
# small JPEGs (Linux x86_64, Python 3.11, Ray 2.60), rounded up.
DECODER_BASE = 256 * MB
BLOCKS_HELD = 2  # the block a decoder fills while Ray still holds the one it yielded
# A CPU predictor with ResNet50 loaded: 880 MB of RSS before its first batch (the model's 98 MB of fp32
# weights and torch's libraries), measured as above, rounded up.
PREDICTOR_BASE = 1024 * MB
# ResNet50's activations and the batch's pixels per image on CPU: 1,155 MB at a batch of 26, less the 880 MB at rest.
PREDICTOR_PER_IMAGE = 12 * MB
# On a GPU the activations live in the device's memory; the host holds CUDA's libraries and context (about
# 1 GB more than torch on CPU, as commonly seen; not measured here) and each batch's uint8 pixels, twice
# (the block and its pinned copy).
GPU_PREDICTOR_BASE = 2048 * MB

@dataclass(frozen=True)
class ActorMemory:
    decoder: int  # bytes one preprocessing actor declares
    predictor: int  # bytes one predictor actor declares

    @staticmethod
    def estimate(batch_size: int, on_gpu: bool, calls_per_predictor: int, block_rows: int, crop: int,
                 max_pixels: int) -> ActorMemory:
        """A decoder: its interpreter, its blocks of ``block_rows`` crops (uint8 RGB) and the largest
        decode ``max_pixels`` allows; a predictor: the model and the batches it runs at once."""
        decoder = DECODER_BASE + BLOCKS_HELD * block_rows * crop * crop * 3 + max_pixels * 3
        if not on_gpu:
            return ActorMemory(decoder, PREDICTOR_BASE + calls_per_predictor * batch_size * PREDICTOR_PER_IMAGE)
        return ActorMemory(decoder, GPU_PREDICTOR_BASE + calls_per_predictor * batch_size * crop * crop * 3 * 2)


def fit_pools(preprocess: int, classify: int, need: ActorMemory, memory: float) -> tuple[int, int]:
    """(decoders, predictors) that fit ``memory`` bytes: fewer decoders first, then fewer predictors, one line
    on stderr when either shrinks; a ``JobError`` naming memory and the fix when not even one of each fits."""
    if need.decoder + need.predictor > memory:
        raise JobError(f"ray: the cluster's memory ({_gb(memory)}) holds not even one preprocessing actor "
                       f"({_gb(need.decoder)}) and one predictor ({_gb(need.predictor)}): run on nodes with more memory, "
                       "or lower --batch-size or --max-pixels")
    predictors = min(classify, int((memory - need.decoder) // need.predictor))
    decoders = min(preprocess, int((memory - predictors * need.predictor) // need.decoder))
    if (decoders, predictors) != (preprocess, classify):
        print(f"ray: the cluster's memory ({_gb(memory)}) holds {decoders} of {preprocess} preprocessing actors "
              f"({_gb(need.decoder)} each) and {predictors} of {classify} predictors ({_gb(need.predictor)} each): "
              "running those", file=sys.stderr, flush=True)
    return decoders, predictors


def _gb(size: float) -> str:
    return f"{size / 1024 ** 3:.1f} GB"
