"""``classify``: the job's preprocessing and model as one step of a user's Ray Data pipeline.

    import ray
    from ray.data.expressions import col
    from runners.ray.api import classify

    images = ray.data.read_parquet("s3://bucket/images/").filter(expr=col("day") == "2026-11-25")
    predictions = classify(images, weights="s3://bucket/models/resnet50.pt", labels="s3://bucket/models/names.txt")
    predictions.write_parquet("s3://bucket/predictions/")

The same stages as ``python -m runners.ray_job`` (``runners.ray.stages``: a CPU actor pool that
decodes, resizes and crops, then a fixed pool of one model actor per GPU), planned by the same
one place (``job.execution.decide``) from the same options with the same defaults, so the rows
are the command's. It writes nothing and is lazy, like any Ray Data transform; the command's
parts, manifest, lease, resume and incremental runs stay the command's.

The pools are sized to leave the steps around them a CPU: the read, filter and write tasks of the
user's pipeline run beside the actors, and Ray Data would wait for ever for a CPU the actors hold.
On a cluster whose autoscaler can add CPU nodes (``runners.ray.node_types``), the nodes that join make that room.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import pyarrow as pa
import ray

from job.api import api_config, api_execution
from job.api.options import api_configs
from job.api.rows import contract_schema
from job.engine import ModelRun
from job.several.stages import recipe_groups, rows_of_blob
from job.errors import JobError
from job.execution import Capabilities
from runners.ray.cluster import Scaling, cluster_devices, plan_scaling
from runners.ray.node_types import bringing
from runners.ray.stages import PREPROCESS_BATCH_ROWS, RayClassifyRows, RayPreprocessRows, classify_stage, preprocess_stage

# The command's --decode auto follows the device through a board actor that lives as long as its
# run; a lazy Dataset has no such end, so here auto keeps the split it starts with.
CAPABILITIES = Capabilities(adapts_auto=False)
# CPUs kept free of the pools for the pipeline's own tasks (read_parquet, filter, write_parquet run as tasks of 1 CPU).
PIPELINE_CPUS = 1


def classify(dataset: ray.data.Dataset, *, num_gpu_actors: int | None = None, num_cpu_actors: int | None = None,
             models: list[dict] | None = None, **options: object) -> ray.data.Dataset | list[ray.data.Dataset]:
    """``dataset``'s rows classified: one output row per input row, the output contract's columns.

    ``dataset``: a column of images and, optionally, a column of ids (``id_column="id"``, any type,
    read as a string; without one, each row gets a unique id, and the other columns are not carried
    over: keep an id column to join them back). The image column is ``image_column=``, else
    ``image``, else the dataset's one column of images: encoded bytes (``read_binary_files``' ``bytes``),
    a uint8 image tensor (``read_images``), or raw uint8 pixels with ``raw_shape=(H, W, C)`` or
    height/width/channels columns.

    Returns a Dataset of ``id``, ``label``, ``label_name``, ``score``, ``topk_labels``,
    ``topk_label_names``, ``topk_scores`` (unless ``embeddings="only"``), ``embedding`` (with
    ``embeddings="with"|"only"``) and ``error`` (null when classified; else why not: a bad image is
    a row, never a failed block).

    ``options``: the command's options by their Python names (``job.api.API_OPTIONS``), with its
    defaults: ``model="resnet50"`` (or ``"timm:NAME"``, ``"hf:PATH"``, an MLflow ``"models:/NAME@ALIAS"``),
    ``weights`` (the model's own: ``"imagenet"`` for a torchvision name), ``labels``, ``embeddings``,
    ``embedding_dtype``, ``batch_size``, ``decode``, ``precision``, ``compile``, ``topk``, ``resize``, ``crop``, ``mean``,
    ``std``, ``max_pixels``, ``s3_endpoint_url``. ``num_gpu_actors``/``num_cpu_actors``: the pools'
    sizes (default: one model actor per GPU, else one on CPU; a decoder per CPU the cluster has
    beyond those and one CPU for the pipeline's own tasks). Where the actors and that CPU do not
    fit the cluster, each actor reserves a share of a CPU instead of a whole one.
    A bad option, a missing image column or one of a type the job cannot read raises
    ``job.errors.JobError`` here, one line naming the argument and the fix, before any work.
    Joins the running Ray, or starts a local one as Ray Data would, to see the cluster's CPUs and GPUs.

    ``models=[{...}, {...}]``: several models, each entry its own options (``model=``, ``weights=``,
    ``embeddings=``...; the others hold for every model), every model in each model actor, each image decoded once:
    returns a list of Datasets, one a model, each with the rows that model alone returns. The pipeline then runs once,
    here (``Dataset.materialize``: Ray has no fan-out of one stream to several consumers), and each model's Dataset
    reads its rows from that run.
    """
    _check_actor_counts(num_gpu_actors, num_cpu_actors)
    if models is not None:
        return _several(dataset, models, num_gpu_actors, num_cpu_actors, options)
    api_config(options)  # a bad option is refused before the schema is read (which may read a block)
    config = api_config(options, _arrow_schema(dataset))
    if not ray.is_initialized():
        ray.init()  # what Ray Data does at the first execution; needed now, to plan for the cluster's devices
    execution = api_execution(config, CAPABILITIES, cluster_devices(), engine="ray", options=options)
    scaling = plan_scaling(execution.batch_size, num_gpu_actors, num_cpu_actors, files=None, crop=execution.recipe.crop,
                           max_pixels=config.max_pixels)
    if not bringing("CPU"):  # an autoscaler that can add CPU nodes makes room; a fixed cluster must be shared
        scaling = fit_to_cluster(scaling, int(ray.cluster_resources().get("CPU", 0)))
    kwargs = {"config": config, "execution": execution}
    decoded = preprocess_stage(dataset, RayPreprocessRows, scaling, PREPROCESS_BATCH_ROWS, kwargs, batch_format="pyarrow")
    return classify_stage(decoded, config, execution, scaling, None, RayClassifyRows)


def _several(dataset: ray.data.Dataset, models: list[dict], num_gpu_actors: int | None, num_cpu_actors: int | None,
             options: dict[str, object]) -> list[ray.data.Dataset]:
    """``classify`` with ``models=``: every model in each model actor, the rows of one run, a Dataset a model."""
    schema = _arrow_schema(dataset)
    entries = [(given, api_config(given, schema)) for given, _ in api_configs(options, models)]
    if not ray.is_initialized():
        ray.init()
    executions = [api_execution(config, CAPABILITIES, cluster_devices(), engine="ray", options=given)
                  for given, config in entries]
    config, execution = entries[0][1], executions[0]
    recipes = recipe_groups(executions)[0]
    scaling = plan_scaling(max(e.batch_size for e in executions), num_gpu_actors, num_cpu_actors, files=None,
                           crop=max(r.crop for r in recipes), max_pixels=config.max_pixels)
    if not bringing("CPU"):
        scaling = fit_to_cluster(scaling, int(ray.cluster_resources().get("CPU", 0)))
    kwargs = {"config": config, "execution": execution, "recipes": recipes}
    decoded = preprocess_stage(dataset, RayPreprocessRows, scaling, PREPROCESS_BATCH_ROWS, kwargs, batch_format="pyarrow")
    runs = tuple(ModelRun(e, None) for e in executions)
    rows = classify_stage(decoded, config, execution, scaling, None, RayClassifyRows, runs).materialize()
    return [rows.map_batches(functools.partial(_model_rows, model=m, schema=contract_schema(e)), batch_format="pyarrow",
                             batch_size=None) for m, e in enumerate(executions)]


def _model_rows(blob: pa.Table, model: int, schema: pa.Schema) -> pa.Table:
    """One model's rows out of a block of several (``job.several.stages.rows_blob``)."""
    tables = [table for number, table in rows_of_blob(blob) if number == model]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def fit_to_cluster(scaling: Scaling, cpus: int) -> Scaling:
    """``scaling`` with each actor's CPU share: a whole CPU where the actors and ``PIPELINE_CPUS`` fit ``cpus``,
    else an equal share of what the pipeline leaves (a 2-CPU laptop: half a CPU for the decoder and the model each).

    Ray's CPUs are a reservation, not a limit: an actor with half a CPU still runs on a whole core when one is
    idle (and the model on CPU uses every core, ``runners.ray.stages.RayClassify``).
    """
    actors = scaling.preprocess_actors + scaling.classify_actors
    if cpus - PIPELINE_CPUS <= 0:
        raise JobError(f"classify: the Ray cluster has {cpus} CPU; its decoder and model actors and the pipeline's own "
                       f"tasks (read, filter, write) need at least {PIPELINE_CPUS + 1}: start Ray with more, "
                       f"e.g. ray.init(num_cpus={PIPELINE_CPUS + 1})")
    if actors + PIPELINE_CPUS <= cpus:
        return scaling
    share = math.floor((cpus - PIPELINE_CPUS) / actors * 100) / 100  # Ray keeps 4 decimals; 2 read better in its logs
    if share < 0.01:
        raise JobError(f"num_cpu_actors={scaling.preprocess_actors}: {actors} actors cannot share the {cpus - PIPELINE_CPUS} "
                       "CPU the pipeline's tasks leave them; pass fewer")
    return dataclasses.replace(scaling, actor_cpus=share)


def _check_actor_counts(num_gpu_actors: int | None, num_cpu_actors: int | None) -> None:
    for name, value in (("num_gpu_actors", num_gpu_actors), ("num_cpu_actors", num_cpu_actors)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise JobError(f"{name}={value!r}: pass a positive number of actors, or leave it out to size it from the cluster")


def _arrow_schema(dataset: ray.data.Dataset) -> pa.Schema:
    """The dataset's columns as Arrow types (Ray reads one block when its plan cannot say them without running)."""
    schema = dataset.schema()
    if schema is None:
        raise JobError("classify: the dataset has no rows to read a schema from; pass a dataset with an image column")
    types = [t if isinstance(t, pa.DataType) else pa.null() for t in schema.types]  # a Python object column: none we read
    return pa.schema(list(zip(schema.names, types)))
