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
"""

from __future__ import annotations

import sys

import ray

from job.api import api_config, api_execution
from job.execution import Capabilities
from runners.ray.cluster import Scaling, cluster_devices, plan_scaling
from runners.ray.stages import PREPROCESS_BATCH_ROWS, RayClassifyRows, RayPreprocessRows, classify_stage, preprocess_stage

# The command's --decode auto follows the device through a board actor that lives as long as its
# run; a lazy Dataset has no such end, so here auto keeps the split it starts with.
CAPABILITIES = Capabilities(adapts_auto=False)


def classify(dataset: ray.data.Dataset, *, num_gpu_actors: int | None = None, num_cpu_actors: int | None = None,
             **options: object) -> ray.data.Dataset:
    """``dataset``'s rows classified: one output row per input row, the output contract's columns.

    ``dataset``: a column of images (``image_column="image"``: encoded bytes, or raw uint8 pixels
    with ``raw_shape=(H, W, C)`` or height/width/channels columns) and, optionally, a column of ids
    (``id_column="id"``; without one, each row gets a unique id, and the other columns are not
    carried over: keep an id column to join them back).

    Returns a Dataset of ``id``, ``label``, ``label_name``, ``score``, ``topk_labels``,
    ``topk_label_names``, ``topk_scores`` (unless ``embeddings="only"``), ``embedding`` (with
    ``embeddings="with"|"only"``) and ``error`` (null when classified; else why not: a bad image is
    a row, never a failed block).

    ``options``: the command's options by their Python names (``job.api.API_OPTIONS``), with its
    defaults: ``weights="imagenet"``, ``arch``, ``labels``, ``embeddings``, ``embedding_dtype``,
    ``batch_size``, ``decode``, ``precision``, ``compile``, ``topk``, ``resize``, ``crop``, ``mean``,
    ``std``, ``max_pixels``, ``s3_endpoint_url``. ``num_gpu_actors``/``num_cpu_actors``: the pools'
    sizes, as the command's ``--num-gpu-actors``/``--num-cpu-actors`` (default: from the cluster).
    A bad option raises ``job.errors.JobError`` here, one line naming it and the fix, before any work.
    Joins the running Ray, or starts a local one as Ray Data would, to see the cluster's GPUs.
    """
    config = api_config(options)
    if not ray.is_initialized():
        ray.init()  # what Ray Data does at the first execution; needed now, to plan for the cluster's devices
    execution = api_execution(config, CAPABILITIES, cluster_devices(), engine="ray")
    scaling = plan_scaling(execution.batch_size, num_gpu_actors, num_cpu_actors, files=None)
    _warn_if_no_cpu_left(scaling)
    kwargs = {"config": config, "execution": execution}
    decoded = preprocess_stage(dataset, RayPreprocessRows, scaling, PREPROCESS_BATCH_ROWS, kwargs, batch_format="pyarrow")
    return classify_stage(decoded, config, execution, scaling, None, RayClassifyRows)


def _warn_if_no_cpu_left(scaling: Scaling) -> None:
    """Say so when the two pools take every CPU: the steps before ``classify`` that run as tasks
    (``read_parquet``, ``filter``) then wait for a CPU that never frees, and Ray Data waits with them."""
    cpus = int(ray.cluster_resources().get("CPU", 1))
    if scaling.preprocess_actors + scaling.classify_actors >= cpus:
        print(f"classify: its {scaling.preprocess_actors} decoder and {scaling.classify_actors} model actors take all {cpus} "
              "CPUs of the Ray cluster, so steps before it that need a CPU (read_parquet, filter) cannot run: "
              "give Ray more CPUs (ray.init(num_cpus=...)), or lower num_cpu_actors", file=sys.stderr)
