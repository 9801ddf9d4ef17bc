"""The engines, by name: the one table that says which command runs which engine.

``runners.compare`` reads it instead of building module names; a new engine is one row here
and one module beside this file.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    module: str  # python -m <module> runs its job
    parser: str  # the module's function returning its argument parser
    # How compare runs it on one machine; every other option is the shared config.
    compare_options: tuple[str, ...] = ()

    def args_parser(self) -> argparse.ArgumentParser:
        """The engine's own parser. Imported on demand: each module pulls in its engine (ray, pyspark)."""
        factory: Callable[[], argparse.ArgumentParser] = getattr(importlib.import_module(self.module), self.parser)
        return factory()


ENGINES = {
    # A fresh local Ray, never a cluster that happens to run here.
    "ray": Engine("runners.ray_job", "get_ray_args_parser", ("--address", "local")),
    # Its default master: local[*,4], all cores, failed tasks retried.
    "spark": Engine("runners.spark_job", "get_spark_args_parser"),
    # The packaged handler behind a loopback server.
    "sagemaker": Engine("runners.sagemaker_job", "get_sagemaker_args_parser", ("--local",)),
    # Plain PyTorch: the baseline.
    "local": Engine("runners.local_job", "get_local_args_parser"),
}
