"""The engines and the commands, thin adapters over the engine-neutral ``job`` core.

- ``ray_job`` (+ ``ray/``: the session, the block codec, the decode feedback, placement): Ray Data actor pools.
- ``spark_job`` (+ ``spark/``: the session, what executors run): Spark's Arrow and pandas UDFs.
- ``sagemaker_job`` (+ ``sagemaker/``: options, the archive, serving, AWS, --local): SageMaker Batch Transform.
- ``local_job``: plain PyTorch DataLoader, the baseline.
- ``compare/``: runs the engines one after another and checks parity; ``make_dataset``: writes Parquet image datasets.
Only modules here import ray, pyspark, boto3 or sagemaker.

``ENGINES`` is the one table of engines, by name: each module exports its ``job.engine.Engine``
record as ``ENGINE``. A new engine is one module and one line here; compare and the benchmarks
read this table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

# First of ours in every command: the clock of its start-up starts here (job.timeline).
from job.timeline import COMMAND_STARTED_AT  # noqa: F401

if TYPE_CHECKING:
    from job.engine import Engine


class EngineEntry(NamedTuple):
    module: str  # python -m <module> runs it; the module's ENGINE is its record
    extra: str | None  # the pip extra its engine needs, e.g. pip install -e '.[ray]'


ENGINES = {
    "ray": EngineEntry("runners.ray_job", "ray"),
    "spark": EngineEntry("runners.spark_job", "spark"),
    "sagemaker": EngineEntry("runners.sagemaker_job", "sagemaker"),
    "local": EngineEntry("runners.local_job", None),
}


def engine(name: str) -> Engine:
    """The engine called ``name``, imported on demand (each module imports its engine: ray, pyspark...)."""
    return importlib.import_module(ENGINES[name].module).ENGINE
