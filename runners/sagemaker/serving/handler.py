"""The SageMaker container contract: model_fn, input_fn, predict_fn, output_fn.

Packaged as ``code/handler.py`` in model.tar.gz next to our ``preprocess``, ``inference``,
``storage`` and ``runners`` packages, so the container runs exactly the code Ray and Spark
run: image cells -> ``Preprocess`` -> ``Classify`` -> the rows of ``job.output.rows``.
The PyTorch container's default ``model_fn`` loads only TorchScript; ours runs the driver's
plan for the job (``job.execution.Execution``) that ``serving.json`` carries, model included
(source, architecture, class names, recipe; its weights ``model.pth`` in the model dir, a Hugging Face
or MLflow model's files in ``model/``, or seeded random ones): the container decides nothing the
driver already decided.

A request is one Parquet shard with an ``id`` column and the image column (see
``runners.sagemaker.shard``); the response is Parquet in the job's ``job.output.rows.output_schema``:
the same columns as every engine writes (class names, embeddings).

Several models (``--models``, ``job.several``): ``serving.json`` lists every model, each with its files in its own
folder of the archive (``models/<n>/``, laid out as one model's) and the run's input files it scores; each shard
carries its input file's index (``FILE``). ``model_fn`` loads every model once (``ClassifyMany``); ``predict_fn``
makes each image's pixels in every recipe the shard's models take from one decode (``Preprocess.several``) and runs
only the models that score its file. The response is ``job.several.stages.rows_blob``'s table (``model``, ``rows``:
each model's rows as an Arrow IPC stream, with its time in its calls and the decodes, ``SENT_TIMES``), as Parquet.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from inference.weights import OWN_WEIGHTS, RANDOM_WEIGHTS
from job.config import JobConfig
from job.engine import ModelRun
from job.errors import JobError
from job.execution import Execution
from job.output.parts import FILE
from job.output.rows import output_schema
from job.several.stages import ClassifyMany, groups_of, recipe_groups, rows_blob
from job.stages import Batch, Classify, PixelBatch, Preprocess
from job.timeline import DECODE_SECONDS, DECODES, DEVICE_SECONDS, with_decode_time
from runners.sagemaker.serving import codecs

SERVING_CONFIG = "serving.json"  # {"config": the job options it needs, "execution": the plan, model included}; package.py writes it
WEIGHTS_FILE = "model.pth"  # {"state_dict", "class_names", "recipe"}: a torchvision or timm model's; absent for "random"
MODEL_FOLDER = "model"  # a Hugging Face folder's or an MLflow model's files, as the driver read them
ID_COLUMN = "id"  # shards always carry their ids in this column
# Several models: serving.json's "models" replaces "execution", one {"execution", "folder", "files"} a model: its plan,
# where its files lie in the archive (as one model's lie in the model dir), the run's input files it scores (None: all).
SEVERAL = "models"
SENT_TIMES = (DEVICE_SECONDS, DECODES, DECODE_SECONDS)  # beside each model's output columns in a several-model response


@dataclass
class ServingModel:
    config: JobConfig
    execution: Execution
    preprocess: Preprocess
    classify: Classify


@dataclass
class ServingModels:
    """Every model of a ``--models`` run, each loaded once, and the one decoder for their recipes."""

    config: JobConfig
    runs: tuple[ModelRun, ...]  # each model's plan and the files it scores (its parts: the driver's, not here)
    preprocess: Preprocess  # the run's distinct recipes, each image decoded once for those that can share it
    classify: ClassifyMany
    groups: tuple[int, ...]  # each model's recipe, an index into the preprocess's recipes

    @property
    def batch_rows(self) -> int:
        """Rows decoded at a time: the largest model batch (each model takes its own)."""
        return max(run.execution.batch_size for run in self.runs)


def model_fn(model_dir: str) -> ServingModel | ServingModels:
    """Load the model (or every model of a ``--models`` run) once per worker from the unpacked model.tar.gz."""
    with open(os.path.join(model_dir, SERVING_CONFIG)) as f:
        serving = json.load(f)
    config = _stage_config(serving["config"])
    if SEVERAL in serving:
        return _several(config, model_dir, serving[SEVERAL])
    execution = _archived(Execution.from_dict(serving["execution"]), model_dir)
    return ServingModel(config, execution, Preprocess(config, execution), Classify(config, execution))


def _stage_config(options: dict) -> JobConfig:
    """The options the stages read (image column, raw shape, top-k, pixel limit); the model is the plan's."""
    options = dict(options)
    raw_shape = options.pop("raw_shape", None)
    # The plan's model (execution.model) is what Classify loads; the config holds only the options the stages read.
    return JobConfig(input=None, output=None, weights=RANDOM_WEIGHTS, id_column=ID_COLUMN,
                     raw_shape=tuple(raw_shape) if raw_shape else None, **options)


def _archived(execution: Execution, folder: str) -> Execution:
    """The plan with its model read from the archive: its weights file and its folder's copy, under ``folder``."""
    model = execution.model
    if model.weights not in (RANDOM_WEIGHTS, OWN_WEIGHTS):  # the archive's own file, named relative to its folder
        model = dataclasses.replace(model, weights=os.path.join(folder, model.weights))
    if model.location == MODEL_FOLDER:  # the archive's copy of the model's folder
        model = dataclasses.replace(model, location=os.path.join(folder, MODEL_FOLDER))
    return dataclasses.replace(execution, model=model)


def _several(config: JobConfig, model_dir: str, entries: list[dict]) -> ServingModels:
    """Every model serving.json's ``models`` lists, each read from its own folder, loaded once; one decoder for all."""
    runs = tuple(ModelRun(_archived(Execution.from_dict(entry["execution"]), os.path.join(model_dir, entry["folder"])),
                          None, None if entry["files"] is None else frozenset(entry["files"])) for entry in entries)
    recipes, groups = recipe_groups(runs)
    preprocess = Preprocess(config, runs[0].execution, recipes=recipes)
    return ServingModels(config, runs, preprocess, ClassifyMany.of(config, runs), groups)


def input_fn(body: bytes, content_type: str) -> pa.Table:
    """The request body as a table; raises a named error for an unknown type or bad body."""
    return codecs.decode(body, content_type)


def predict_fn(data: pa.Table, model: ServingModel | ServingModels) -> pa.Table:
    """One output row per input row, in input order, the plan's batch size per model call (several models: each
    model's rows of the request, in ``rows_blob``'s table)."""
    several = isinstance(model, ServingModels)
    for column in (ID_COLUMN, model.config.image_column, *((FILE,) if several else ())):
        if column not in data.schema.names:
            raise codecs.UndecodableInputError(f"request has no {column!r} column (columns: {', '.join(data.schema.names)})")
    if several:
        return _predict_several(data, model)
    schema = output_schema(model.execution)
    parts = [schema.empty_table()]
    for batch in data.to_batches(max_chunksize=model.execution.batch_size):
        parts.append(model.classify(_preprocessed(model.preprocess, batch)).select(schema.names))
    return pa.concat_tables(parts)


def _preprocessed(preprocess: Preprocess, batch: pa.RecordBatch, files: np.ndarray | None = None,
                  groups: list[int] | None = None) -> Batch | list[PixelBatch]:
    """The batch's pixels (several models: a batch in each recipe of ``groups``); a JobError is the request's fault."""
    ids = batch.column(ID_COLUMN).cast(pa.string()).to_pylist()
    try:
        if groups is None:
            return preprocess(ids, batch)
        # Positions within the request: the stages want some; the response leaves them out (the shard keeps the order).
        return preprocess.several(ids, batch, files, np.arange(len(ids), dtype=np.int64), groups)
    except JobError as e:  # e.g. an image column of the wrong type: the request's fault, a 4xx
        raise codecs.UndecodableInputError(str(e)) from e


def _predict_several(data: pa.Table, models: ServingModels) -> pa.Table:
    """Each model's rows of the request: every image decoded once, for the models that score its file only."""
    rows: dict[int, list[pa.Table]] = {}
    for batch in data.to_batches(max_chunksize=models.batch_rows):
        files = batch.column(FILE).to_numpy(zero_copy_only=False).astype(np.int32)
        for pixels in _preprocessed(models.preprocess, batch, files, _groups(models, files)):
            for number, table in models.classify(pixels):
                rows.setdefault(number, []).append(_as_sent(table, models.runs[number].execution))
    return rows_blob([(number, pa.concat_tables(tables)) for number, tables in sorted(rows.items())])


def _groups(models: ServingModels, files: np.ndarray) -> list[int]:
    """The recipes the rows of ``files`` are made in: those of the models that score any of them."""
    indices = np.unique(files).tolist()
    groups = sorted({group for index in indices for group in groups_of(models.runs, models.groups, index)})
    if not groups:
        raise codecs.UndecodableInputError(f"request rows of input files {indices}: no model of this "
                                           "archive scores them; send the shards of the run the archive was built for")
    return groups


def _as_sent(table: pa.Table, execution: Execution) -> pa.Table:
    """A model's rows as the response carries them: its output columns, its time in its calls and the decodes (zero
    where another model's rows carry them)."""
    if DECODES not in table.column_names:
        table = with_decode_time(table, 0, 0.0)
    return table.select([*output_schema(execution).names, *SENT_TIMES])


def output_fn(prediction: pa.Table, accept: str) -> tuple[bytes, str]:
    """The response body and its content type (the toolkit accepts this pair)."""
    return codecs.encode(prediction, accept)
