"""The job as a Python call inside someone else's pipeline, engine-neutral.

- ``options``: the command's options as keyword arguments, checked by ``JobConfig`` and decided
  by ``job.execution.decide`` (the one place), for the Ray and Spark calls and ``Classifier``;
  a refusal names the Python argument, not the command's flag.
- ``rows``: a batch of the user's rows (image column, optional id column) -> a ``job.stages``
  batch, and the stages' output back to the output contract's columns.
- ``columns``: which column holds the images and what its Arrow type says they are (bytes, raw
  pixels, a tensor, Spark's image struct), checked at the call; each batch read as the stages want it.
- ``Classifier``: the whole job in this process, for a notebook or a test.

The engines' calls are ``runners.ray.api.classify`` and ``runners.spark.api.classify``.
"""

from job.api.classifier import Classifier
from job.api.options import API_OPTIONS, api_config, api_execution

__all__ = ["API_OPTIONS", "Classifier", "api_config", "api_execution"]
