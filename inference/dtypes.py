"""The number formats a job names: the precision the model computes in, the embeddings' element type.

Torch-free, for the command line and the driver's plan (``job.execution``, which decides the
precision once per run); the torch dtypes behind these names are the predictor's business.
"""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16")
# Embeddings (the pooled feature) as the host receives them; float16 halves the bytes a row writes.
EmbeddingDtype = Literal["float16", "float32"]
EMBEDDING_DTYPES: tuple[EmbeddingDtype, ...] = ("float16", "float32")
