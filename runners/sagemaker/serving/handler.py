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
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

import pyarrow as pa

from inference.weights import OWN_WEIGHTS, RANDOM_WEIGHTS
from job.config import JobConfig
from job.errors import JobError
from job.execution import Execution
from job.output.rows import output_schema
from job.stages import Classify, Preprocess
from runners.sagemaker.serving import codecs

SERVING_CONFIG = "serving.json"  # {"config": the job options it needs, "execution": the plan, model included}; package.py writes it
WEIGHTS_FILE = "model.pth"  # {"state_dict", "class_names", "recipe"}: a torchvision or timm model's; absent for "random"
MODEL_FOLDER = "model"  # a Hugging Face folder's or an MLflow model's files, as the driver read them
ID_COLUMN = "id"  # shards always carry their ids in this column


@dataclass
class ServingModel:
    config: JobConfig
    execution: Execution
    preprocess: Preprocess
    classify: Classify


def model_fn(model_dir: str) -> ServingModel:
    """Load the model once per worker from the unpacked model.tar.gz."""
    with open(os.path.join(model_dir, SERVING_CONFIG)) as f:
        serving = json.load(f)
    options = serving["config"]
    execution = Execution.from_dict(serving["execution"])
    model = execution.model
    if model.weights not in (RANDOM_WEIGHTS, OWN_WEIGHTS):  # the archive's own file, named relative to the model dir
        model = dataclasses.replace(model, weights=os.path.join(model_dir, model.weights))
    if model.location == MODEL_FOLDER:  # the archive's copy of the model's folder
        model = dataclasses.replace(model, location=os.path.join(model_dir, MODEL_FOLDER))
    execution = dataclasses.replace(execution, model=model)
    raw_shape = options.pop("raw_shape", None)
    # The plan's model (execution.model) is what Classify loads; the config holds only the options the stages read.
    config = JobConfig(input=None, output=None, weights=RANDOM_WEIGHTS, id_column=ID_COLUMN,
                       raw_shape=tuple(raw_shape) if raw_shape else None, **options)
    return ServingModel(config, execution, Preprocess(config, execution), Classify(config, execution))


def input_fn(body: bytes, content_type: str) -> pa.Table:
    """The request body as a table; raises a named error for an unknown type or bad body."""
    return codecs.decode(body, content_type)


def predict_fn(data: pa.Table, model: ServingModel) -> pa.Table:
    """One output row per input row, in input order, the plan's batch size per model call."""
    for column in (ID_COLUMN, model.config.image_column):
        if column not in data.schema.names:
            raise codecs.UndecodableInputError(f"request has no {column!r} column (columns: {', '.join(data.schema.names)})")
    schema = output_schema(model.execution)
    parts = [schema.empty_table()]
    for batch in data.to_batches(max_chunksize=model.execution.batch_size):
        ids = batch.column(ID_COLUMN).cast(pa.string()).to_pylist()
        try:
            pixels = model.preprocess(ids, batch)
        except JobError as e:  # e.g. an image column of the wrong type: the request's fault, a 4xx
            raise codecs.UndecodableInputError(str(e)) from e
        parts.append(model.classify(pixels).select(schema.names))
    return pa.concat_tables(parts)


def output_fn(prediction: pa.Table, accept: str) -> tuple[bytes, str]:
    """The response body and its content type (the toolkit accepts this pair)."""
    return codecs.encode(prediction, accept)
