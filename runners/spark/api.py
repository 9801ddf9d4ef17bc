"""``classify``: the job's preprocessing and model as a step of a user's Spark pipeline.

    from runners.spark.api import classify

    images = spark.read.table("main.photos.images").where("day = '2026-11-25'")
    predictions = classify(images, weights="/dbfs/models/resnet50.pt", labels="/dbfs/models/names.txt")
    predictions.write.mode("append").saveAsTable("main.photos.predictions")

The same Arrow function as ``python -m runners.spark_job --udf iterator`` (``runners.spark.rows``:
preprocessing read ahead in a thread, the model loaded once per Python worker), planned by the
same one place (``job.execution.decide``) from the same options with the same defaults, so the
rows are the command's. It writes nothing and is lazy, like any DataFrame transformation; the
command's parts, manifest, lease, resume and incremental runs stay the command's.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type

from job.api import api_config, api_execution
from job.api.options import api_configs
from job.api.rows import input_columns
from job.errors import JobError
from job.execution import Capabilities
from runners.spark.prefetch import DEFAULT_PREFETCH
from runners.spark.session import session_devices, workers_use_this_python
from job.several.stages import MODEL, ROWS
from runners.spark.rows import ClassifyRows, ModelRows, spark_fields


def classify(df: DataFrame, *, prefetch: int = DEFAULT_PREFETCH, models: list[dict] | None = None,
             **options: object) -> DataFrame | list[DataFrame]:
    """``df``'s rows classified: one output row per input row, the output contract's columns.

    ``df``: a column of images and, optionally, a column of ids (``id_column="id"``, any type, read
    as a string; without one each row gets a unique id, and the other columns are not carried over:
    keep an id column to join them back). The image column is ``image_column=``, else ``image``,
    else the DataFrame's one column of images: encoded bytes (``binaryFile``'s ``content``), the
    image struct of ``format("image")``, or raw uint8 pixels with ``raw_shape=(H, W, C)`` or
    height/width/channels columns.

    Returns a DataFrame of ``id``, ``label``, ``label_name``, ``score``, ``topk_labels``,
    ``topk_label_names``, ``topk_scores`` (unless ``embeddings="only"``), ``embedding`` (an array of
    float, Spark having no float16, with ``embeddings="with"|"only"``) and ``error`` (null when
    classified; else why not: a bad image is a row, never a failed task).

    ``options``: the command's options by their Python names (``job.api.API_OPTIONS``), with its
    defaults: ``model="resnet50"`` (or ``"timm:NAME"``, ``"hf:PATH"``, an MLflow ``"models:/NAME@ALIAS"``),
    ``weights`` (the model's own: ``"imagenet"`` for a torchvision name), ``labels``, ``embeddings``, ``batch_size``,
    ``decode``, ``precision``, ``compile``, ``topk``, ``resize``, ``crop``, ``mean``, ``std``, ``s3_endpoint_url``...
    ``prefetch``: batches decoded ahead while the model runs, as the command's ``--prefetch``.
    Tasks get GPUs as the command's do (``spark.task.resource.gpu.amount``). On a local master the
    Python workers run this interpreter unless ``PYSPARK_PYTHON`` says otherwise.
    A bad option, a missing image column or one of a type the job cannot read raises
    ``job.errors.JobError`` here, one line naming the argument and the fix, before any work.

    ``models=[{...}, {...}]``: several models, each entry its own options (``model=``, ``weights=``,
    ``embeddings=``...; the others hold for every model), every model in each Python worker, each image decoded once:
    returns a list of DataFrames, one a model, each with the rows that model alone returns. They share one persisted
    DataFrame of the models' rows (``DataFrame.persist``): the first action computes it, the others read it; call
    ``unpersist`` on any of them's ``persisted`` attribute when done.
    """
    if not isinstance(prefetch, int) or prefetch < 0:
        raise JobError(f"prefetch={prefetch!r}: pass 0 (no read-ahead) or more batches")
    if models is not None:
        return _several(df, models, prefetch, options)
    api_config(options)  # a bad option first, whatever the columns
    config = api_config(options, arrow_schema(df))
    workers_use_this_python(df.sparkSession)
    execution = api_execution(config, Capabilities(), session_devices(df.sparkSession), engine="spark", options=options)
    columns = input_columns(df.columns, config.image_column, config.id_column)
    schema = from_arrow_schema(pa.schema(spark_fields(execution)))
    return df.select(*columns).mapInArrow(ClassifyRows(config, execution, prefetch), schema)


def _several(df: DataFrame, models: list[dict], prefetch: int, options: dict[str, object]) -> list[DataFrame]:
    """``classify`` with ``models=``: every model in each Python worker, one persisted run, a DataFrame a model."""
    schema = arrow_schema(df)
    entries = [(given, api_config(given, schema)) for given, _ in api_configs(options, models)]
    workers_use_this_python(df.sparkSession)
    devices = session_devices(df.sparkSession)
    executions = tuple(api_execution(config, Capabilities(), devices, engine="spark", options=given)
                       for given, config in entries)
    config = entries[0][1]
    columns = input_columns(df.columns, config.image_column, config.id_column)
    blobs = from_arrow_schema(pa.schema([pa.field(MODEL, pa.int16()), pa.field(ROWS, pa.binary())]))
    rows = df.select(*columns).mapInArrow(ClassifyRows(config, executions[0], prefetch, executions), blobs).persist()
    out = []
    for model, execution in enumerate(executions):
        frame = rows.mapInArrow(ModelRows(model), from_arrow_schema(pa.schema(spark_fields(execution))))
        frame.persisted = rows  # what the caller unpersists once done with every model's rows
        out.append(frame)
    return out


def arrow_schema(df: DataFrame) -> pa.Schema:
    """``df``'s columns as the Arrow types its batches reach ``mapInArrow`` with; a type Arrow has no match for
    (a variant, an interval) as null: no column the job reads."""
    fields = []
    for field in df.schema.fields:
        try:
            fields.append(pa.field(field.name, to_arrow_type(field.dataType, timezone="UTC")))  # zone: no matter here
        except TypeError:  # pyspark's PySparkTypeError for a type Arrow cannot carry
            fields.append(pa.field(field.name, pa.null()))
    return pa.schema(fields)
