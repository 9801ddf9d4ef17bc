"""``--models FILE``: several models in one run, each into its own table, named in a TOML file of ``[[models]]``.

Teams run a classifier, an embedder and a filter over the same images; one run reads and decodes each image once
and feeds every model that needs it (``job.several``). Each entry names one model and its table with the command's
own options, by their Python names::

    [[models]]
    model = "resnet50"
    weights = "s3://my-bucket/models/pets-37.pt"
    labels = "s3://my-bucket/models/pets.txt"
    output = "s3://my-bucket/pets/"
    table_format = "delta"

    [[models]]
    model = "hf:s3://my-bucket/models/clip-vit-base-patch32"
    embeddings = "only"
    output = "s3://my-bucket/vectors/"

The input, re-run (``--incremental``, ``--resume``, ``--overwrite``), execution and printing options stay on the
command line and hold for every model; ``--output`` or a model option there beside ``--models`` is refused in one line,
as is an entry's key that is not one of ``ENTRY_FIELDS``, or two entries into one output. Each entry is checked as the
command's options are (``JobConfig``), its refusal naming the entry.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from job.config import JobConfig, parse_duration
from job.errors import JobError
from storage import resolve, storage_errors, within

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as its own package (a dependency there)
    import tomli as tomllib

# What an entry may say: the model and its table (the command's options of those groups, by their Python names).
MODEL_FIELDS = ("model", "arch", "weights", "labels", "embeddings", "embedding_dtype", "topk", "resize", "crop", "mean",
                "std", "interpolation", "crop_mode", "batch_size")
TABLE_FIELDS = ("output", "table_format", "time_travel_days", "iceberg_catalog", "iceberg_table", "rollout_files",
                "rollout_time")
ENTRY_FIELDS = frozenset((*MODEL_FIELDS, *TABLE_FIELDS))
# Of those, what the command line may also say, for every model an entry does not say otherwise: the model call's size.
SHARED_DEFAULTS = frozenset({"batch_size"})
TUPLES = ("mean", "std")  # TOML arrays, JobConfig tuples


def read_entries(path: str, s3_endpoint_url: str | None = None) -> list[dict]:
    """The ``[[models]]`` entries of the TOML file at ``path`` (local or s3://); one line for a file that is not one."""
    location = resolve(path, s3_endpoint_url)
    with storage_errors(path), location.filesystem.open_input_stream(location.path) as f:
        text = f.read()
    try:
        document = tomllib.loads(text.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise JobError(f"--models {path}: not a TOML file ({e}); write one [[models]] table per model") from e
    entries = document.get("models")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise JobError(f"--models {path}: expected one [[models]] table per model (model = ..., output = ...), got "
                       f"{sorted(document) or 'nothing'}")
    return entries


def entry_configs(path: str, shared: Mapping[str, object], entries: Sequence[Mapping]) -> tuple[JobConfig, ...]:
    """One ``JobConfig`` per entry: the command line's ``shared`` values and the entry's own; each checked, its refusal
    naming the entry; two entries into one output (or one inside another's) refused."""
    configs = []
    for number, entry in enumerate(entries, start=1):
        name = f"--models {path} entry {number} ({entry.get('model') or entry.get('arch') or 'resnet50'})"
        unknown = sorted(set(entry) - ENTRY_FIELDS)
        if unknown:
            raise JobError(f"{name}: {unknown[0]!r} is not an option an entry takes (a model's or its table's: "
                           f"{', '.join(sorted(ENTRY_FIELDS))}); the input, re-run and execution options go on the "
                           "command line, for every model")
        if not entry.get("output"):
            raise JobError(f"{name}: no output; each model writes its own table: output = \"s3://bucket/prefix/\"")
        values = {key: tuple(value) if key in TUPLES and isinstance(value, list) else value for key, value in entry.items()}
        try:
            if "rollout_time" in values:
                values["rollout_time"] = parse_duration(values["rollout_time"])
            configs.append(JobConfig(**{**shared, **values, "models": None}))
        except (JobError, TypeError, ValueError) as e:
            raise JobError(f"{name}: {e}") from e
    _require_apart(path, configs)
    return tuple(configs)


def _require_apart(path: str, configs: Sequence[JobConfig]) -> None:
    """Every entry its own table: no output twice, none inside another's (its parts would be the other's stray files)."""
    for i, one in enumerate(configs):
        for j, other in enumerate(configs[i + 1:], start=i + 1):
            if one.output == other.output or within(one.output, other.output) or within(other.output, one.output):
                raise JobError(f"--models {path}: entries {i + 1} and {j + 1} write {one.output} and {other.output}: "
                               "each model writes its own table, apart from the others'")
