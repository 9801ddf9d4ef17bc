"""The API's options: the command's shared options, as keyword arguments, with the command's defaults.

``api_config(options, schema)`` builds the ``JobConfig`` the command would build from the same
flags (so each option is checked in one place, with the same one-line errors) and, given the
caller's rows' Arrow schema, finds and checks their image column (``job.api.columns``);
``api_execution`` decides the run's device, batch size, precision, decode, compile and outputs the
way the command does (``job.execution.decide``). Options that only a run over an input prefix has
(``input``, ``output``, ``limit``, ``resume``...) are refused: the caller's pipeline reads and writes.
A refusal names the Python argument (``batch_size=0``), never the command's flag (``--batch-size``).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import re
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from inference.archs import ARCHS
from inference.compile import COMPILE_CHOICES
from inference.dtypes import EMBEDDING_DTYPES, PRECISIONS
from inference.errors import WeightsError
from job.api.columns import with_image_column
from job.config import EMBEDDINGS_CHOICES, JobConfig
from job.errors import JobError
from job.execution import Capabilities, Devices, Execution, decide, model_for
from preprocess.recipe import CROP_MODES, INTERPOLATIONS
from preprocess.routing import DECODE_MODES
from storage import StorageError

# What a run over an input prefix into an output table decides, and a call inside a pipeline does not have.
PREFIX_ONLY = ("input", "output", "limit", "skip_id_check", "overwrite", "resume", "incremental", "keep_removed", "rollout_files",
               "objects_per_part", "table_format", "time_travel_days", "iceberg_catalog", "iceberg_table", "rollout_time",
               "dry_run", "price_per_hour", "models")
API_OPTIONS = tuple(f.name for f in dataclasses.fields(JobConfig) if f.name not in PREFIX_ONLY)
TUPLES = ("raw_shape", "mean", "std")  # given as lists too (a JSON config, a notebook); JobConfig holds tuples
URI_OPTIONS = ("model", "weights", "labels", "s3_endpoint_url")
_HINTS = typing.get_type_hints(JobConfig)  # each option's type, as JobConfig declares it
# The words a refusal may put after a flag as its value ("--decode gpu decodes ..."), by option.
CHOICES = {"decode": DECODE_MODES, "precision": PRECISIONS, "compile": COMPILE_CHOICES, "arch": tuple(ARCHS),
           "embeddings": EMBEDDINGS_CHOICES, "embedding_dtype": EMBEDDING_DTYPES, "interpolation": INTERPOLATIONS,
           "crop_mode": CROP_MODES}
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?: (\S+))?")


def api_config(options: dict[str, object], schema: pa.Schema | None = None) -> JobConfig:
    """The ``JobConfig`` of ``options`` (``API_OPTIONS`` by name) for rows of ``schema`` (None: not known yet);
    ``JobError`` names an unknown or bad option, or an image column the job cannot read."""
    for name in options:
        if name not in API_OPTIONS:
            raise JobError(f"{name}={options[name]!r}: not an option of classify; the options are {', '.join(API_OPTIONS)}")
    given = {name: _plain(name, value) for name, value in options.items()}
    for name, value in given.items():
        _check_type(name, value, _HINTS[name])
    with python_arguments(options):
        config = JobConfig(input=None, output=None, **given)
        return config if schema is None else with_image_column(config, schema, named="image_column" in options)


def api_configs(options: dict[str, object], models: object) -> list[tuple[dict[str, object], JobConfig]]:
    """``models=[{...}, {...}]``: each model's options (a dict of ``API_OPTIONS`` by name, over the call's others) and
    its ``JobConfig``; one line naming the entry for a bad one. The model's own options belong in its entry."""
    if not isinstance(models, (list, tuple)) or not models or not all(isinstance(entry, dict) for entry in models):
        raise JobError(f"models={models!r}: expected a list of dicts, one a model (model=, weights=, embeddings=, ...)")
    shared = {name: value for name, value in options.items() if name not in MODEL_OPTIONS}
    if len(shared) != len(options):
        name = next(name for name in options if name in MODEL_OPTIONS)
        raise JobError(f"{name}= with models=: each model's own options go in its entry of models=, not beside it")
    out = []
    for number, entry in enumerate(models, start=1):
        merged = {**shared, **entry}
        try:
            out.append((merged, api_config(merged)))
        except JobError as e:
            raise JobError(f"models entry {number} ({entry.get('model', 'resnet50')}): {e}") from e
    return out


# A model's own options, which models= entries hold (the call's other options hold for every model).
MODEL_OPTIONS = ("model", "arch", "weights", "labels", "embeddings", "embedding_dtype", "topk", "resize", "crop", "mean",
                 "std", "interpolation", "crop_mode")


def _plain(name: str, value: object) -> object:
    """A list for a tuple option (a JSON config, a notebook) and a ``pathlib.Path`` for a file: as ``JobConfig`` holds them."""
    if name in TUPLES and isinstance(value, list):
        return tuple(value)
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _check_type(name: str, value: object, hint: object) -> None:
    """``JobError`` for a value of another type than the option's (``batch_size="8"``), before ``JobConfig`` compares it."""
    if not _fits(value, hint):
        # A URL may carry credentials: its type is named, never its value.
        shown = f": a {type(value).__name__}" if name in URI_OPTIONS else f"={value!r}"
        raise JobError(f"{name}{shown}: expected {_describe(hint)}")


def _fits(value: object, hint: object) -> bool:
    if isinstance(hint, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return isinstance(value, tuple) and len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
    number = {int: numbers.Integral, float: numbers.Real}.get(hint)
    if number is not None:
        return isinstance(value, number) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _describe(hint: object) -> str:
    """``int | None`` -> ``an integer, or None``; ``tuple[int, int, int]`` -> ``a tuple of 3 integers``."""
    if isinstance(hint, types.UnionType):
        return ", or ".join(_describe(arg) for arg in typing.get_args(hint))
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return f"a tuple of {len(args)} {'integers' if args[0] is int else 'numbers'}"
    return {int: "an integer", float: "a number", str: "a string", bool: "True or False", type(None): "None"}.get(hint, str(hint))


def api_execution(config: JobConfig, capabilities: Capabilities, devices: Devices, engine: str,
                  options: dict[str, object] | None = None) -> Execution:
    """How the call computes, decided as the command decides it (``options``: the caller's, for its refusals).

    The row count of a pipeline is not known before it runs, so ``compile="auto"`` (compile by the
    job's size) stays eager; ``compile="on"`` compiles.
    """
    with python_arguments(options or {}):
        return decide(config, capabilities, devices, images=0, model=model_for(config), engine=engine)


@contextmanager
def python_arguments(options: dict[str, object]) -> Iterator[None]:
    """A one-line refusal raised inside, re-raised naming the API's arguments where it named the command's flags."""
    try:
        yield
    except (JobError, WeightsError, StorageError) as e:
        worded = in_python_words(str(e), options)
        if worded == str(e):
            raise
        raise type(e)(worded) from e


def in_python_words(message: str, options: dict[str, object]) -> str:
    """``--batch-size must be positive`` -> ``batch_size=0 must be positive``; ``use --decode cpu`` -> ``use decode='cpu'``.

    A string option's value is quoted only as the message quotes it (a URL there is already
    redacted); numbers and shapes are quoted from ``options``. Flags of no API option stay.
    """
    def argument(match: re.Match) -> str:
        name, word = match[1].replace("-", "_"), match[2]
        if name not in API_OPTIONS:
            return match[0]
        if word is not None and _is_value(name, word):
            value, tail = re.fullmatch(r"(.*?)([:;,)]*)", word).groups()
            return f"{name}={value!r}{tail}"
        given = options.get(name)
        said = f"{name}={given!r}" if given is not None and not isinstance(given, str) else f"{name}="
        return said if word is None else f"{said} {word}"

    return _FLAG.sub(argument, message)


def _is_value(name: str, word: str) -> bool:
    """Whether the word after a flag is its value (a choice, a path, a URI) rather than the sentence going on."""
    return word.rstrip(":;,)") in CHOICES.get(name, ()) or "/" in word
