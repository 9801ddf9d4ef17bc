"""The API's options: the command's shared options, as keyword arguments, with the command's defaults.

``api_config(options)`` builds the ``JobConfig`` the command would build from the same flags (so
each option is checked in one place, with the same one-line errors), and ``api_execution``
decides the run's device, batch size, precision, decode, compile and outputs the way the command
does (``job.execution.decide``). Options that only a run over an input prefix has (``input``,
``output``, ``limit``, ``resume``...) are refused: the caller's pipeline reads and writes.
"""

from __future__ import annotations

import dataclasses

from job.config import JobConfig
from job.errors import JobError
from job.execution import Capabilities, Devices, Execution, decide, model_for

# What a run over an input prefix into an output table decides, and a call inside a pipeline does not have.
PREFIX_ONLY = ("input", "output", "limit", "skip_id_check", "overwrite", "resume", "incremental", "keep_removed",
               "objects_per_part", "table_format", "time_travel_days", "iceberg_catalog", "iceberg_table")
API_OPTIONS = tuple(f.name for f in dataclasses.fields(JobConfig) if f.name not in PREFIX_ONLY)
TUPLES = ("raw_shape", "mean", "std")  # given as lists too (a JSON config, a notebook); JobConfig holds tuples


def api_config(options: dict[str, object]) -> JobConfig:
    """The ``JobConfig`` of ``options`` (``API_OPTIONS`` by name); ``JobError`` names an unknown or bad one."""
    for name in options:
        if name not in API_OPTIONS:
            raise JobError(f"{name}={options[name]!r}: not an option of classify; the options are {', '.join(API_OPTIONS)}")
    given = {name: tuple(value) if name in TUPLES and value is not None else value for name, value in options.items()}
    return JobConfig(input=None, output=None, **given)


def api_execution(config: JobConfig, capabilities: Capabilities, devices: Devices, engine: str) -> Execution:
    """How the call computes, decided as the command decides it.

    The row count of a pipeline is not known before it runs, so ``compile="auto"`` (compile by the
    job's size) stays eager; ``compile="on"`` compiles.
    """
    return decide(config, capabilities, devices, images=0, model=model_for(config), engine=engine)
