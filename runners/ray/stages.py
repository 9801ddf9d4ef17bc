"""The Ray pipeline's two actor pools, shared by the command (``runners.ray_job``) and the API (``runners.ray.api``).

- Preprocessing (CPU actors, no torch): ``RayPreprocess`` reads the command's planned input
  files; ``RayPreprocessRows`` takes the rows of a user's Dataset. Both run ``job.stages.Preprocess``
  and yield the same blocks (``runners.ray.blocks``), so what follows cannot tell them apart.
- Classification (``classify_stage``): a fixed pool of ``RayClassify`` actors, one per GPU (CPU
  when the cluster has none), model loaded once per actor.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import numpy as np
import pyarrow as pa
import ray

from job.api.rows import contract_table, preprocess_rows, preprocess_rows_many, unique_ids
from job.config import JobConfig
from job.execution import Execution
from job.feedback import IdleMeter
from job.input.plan import InputPlan
from job.output.parts import FILE
from job.engine import ModelRun
from job.several.stages import ClassifyMany, groups_of, recipe_groups, rows_blob
from job.stages import Preprocess
from runners.ray.blocks import batch_of, batches_of, block_of
from runners.ray.cluster import ACTOR_RESTARTS, PREPROCESS_BATCH_ROWS, Scaling
from runners.ray.feedback import BoardReader, poster
from runners.ray.placement import record_placement


class RayPreprocess:
    """CPU actor: read each planned input file and yield preprocessed blocks. Imports no torch."""

    def __init__(self, plan: InputPlan, config: JobConfig, execution: Execution, run_id: str,
                 runs: tuple[ModelRun, ...] = ()) -> None:
        record_placement(run_id, "preprocess")
        self.plan, self.runs = plan, runs
        # Several models (job.several): each file made in the recipes of the models that score it, one decode each.
        recipes, self.groups = recipe_groups(runs) if len(runs) > 1 else ((), ())
        # --decode auto: the predictors' word on how hungry the device is, for this decoder's router.
        self.preprocess = Preprocess(config, execution, BoardReader(run_id) if execution.auto_adapts else None, recipes)

    def __call__(self, batch: dict[str, np.ndarray]) -> Iterator[pa.Table]:
        for index in batch[FILE].tolist():
            several = groups_of(self.runs, self.groups, index) if self.groups else None
            for block in self.preprocess.read(self.plan, index, PREPROCESS_BATCH_ROWS, several):
                yield block_of(block)


class RayPreprocessRows:
    """CPU actor: a block of the user's rows (image column, optional id column) -> one preprocessed block (the API's
    ``models=``: its rows in each model's recipe, from one decode an image where the recipes allow)."""

    def __init__(self, config: JobConfig, execution: Execution, recipes: tuple = ()) -> None:
        self.preprocess = Preprocess(config, execution, recipes=recipes)
        self.several = len(recipes) > 1

    def __call__(self, rows: pa.Table) -> pa.Table:
        if not self.several:
            return block_of(preprocess_rows(self.preprocess, rows, unique_ids))
        return pa.concat_tables([block_of(batch) for batch in preprocess_rows_many(self.preprocess, rows, unique_ids)])


class RayClassify:
    """GPU actor (CPU when the cluster has no GPU): the model, loaded once, on one device.

    ``run_id``: the command's run, whose placement registry and ``--decode auto`` board it reports
    to; None (the API): it reports to none.
    """

    def __init__(self, config: JobConfig, execution: Execution, run_id: str | None, concurrency: int,
                 runs: tuple[ModelRun, ...] = ()) -> None:
        import torch  # here, not at the top: the decoders import this module too, and must not load torch

        # Ray sets CUDA_VISIBLE_DEVICES to this actor's GPU, so it is always cuda:0 here. Several models (job.several):
        # every one in this actor, each loaded once.
        many = runs if len(runs) > 1 else (ModelRun(execution, None),)
        self.classify = ClassifyMany.of(config, many)
        self.crops = tuple(recipe.crop for recipe in recipe_groups(many)[0])
        if run_id is not None:
            first = self.classify.classifiers[0]
            decoder = first.device_stage.decoder.name if execution.decode != "cpu" else None
            record_placement(run_id, "classify", device=str(first.predictor.device), compiled=execution.compile,
                             decoder=decoder)
        if execution.device == "cpu":
            # Ray pins actors to one thread (OMP_NUM_THREADS=1); on CPU the model is the
            # bottleneck by far, so let it use the node's cores.
            torch.set_num_threads(os.cpu_count() or 1)
        actor = ray.get_runtime_context().get_actor_id()
        self.meter = IdleMeter(poster(run_id, actor), concurrency) if execution.auto_adapts else nullcontext()

    def __call__(self, batch: pa.Table) -> pa.Table:
        """The model rows of a batch, every model's as one IPC stream (``job.several.rows_blob``)."""
        with self.meter:
            rows = [row for part in batches_of(batch, self.crops) for row in self.classify(part)]
        return rows_blob(rows)


class RayClassifyRows(RayClassify):
    """``RayClassify`` for the API: the output contract's columns only (no timeline, no positions); several models
    (``models=``): each model's as one IPC stream (``job.several.stages.rows_blob``)."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        classify = self.classify
        with self.meter:
            if len(classify.classifiers) == 1:
                one = classify.classifiers[0]
                return contract_table(one(batch_of(batch, self.crops[0])), one.execution)
            rows = [row for part in batches_of(batch, self.crops) for row in classify(part)]
        return rows_blob([(m, contract_table(t, classify.executions[m])) for m, t in rows])


@contextmanager
def _remote_args() -> Iterator[dict]:
    """``map_batches``'s arguments that only go through ``**ray_remote_args``: the actors' restart budget.

    Deprecated for removal in Ray 2.64 (hence the extra's <2.64) with no named successor: its
    warning would greet every run with nothing for the user to change. A task on an actor is
    retried for as long as its actor lives (Ray Data's -1): a bounded count fails a task at the
    first node lost under it (``ActorUnavailableError``), and the actor's restarts bound it anyway.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated", category=DeprecationWarning)
        yield {"max_restarts": ACTOR_RESTARTS, "max_task_retries": -1}


def preprocess_stage(dataset: ray.data.Dataset, stage: type, scaling: Scaling, batch_size: int,
                     constructor_kwargs: dict, batch_format: str = "default") -> ray.data.Dataset:
    """``dataset`` through a pool of ``stage`` actors (``RayPreprocess`` or ``RayPreprocessRows``), ``scaling.actor_cpus`` each."""
    with _remote_args() as remote_args:
        return dataset.map_batches(
            stage,
            batch_size=batch_size,
            batch_format=batch_format,
            compute=scaling.preprocess_pool(),
            num_cpus=scaling.actor_cpus,
            memory=scaling.decoder_memory or None,
            # Ray Data places actors with "SPREAD", which may put a decoder on a GPU node's last
            # free CPU and leave the predictor there pending. Ray core's "DEFAULT" (hybrid) policy
            # keeps CPU-only work off GPU nodes while a CPU node has room (scheduler_avoid_gpu_nodes),
            # and still uses a GPU node's spare CPUs when none has. Passed through **ray_remote_args:
            # its named successor, label_selector, has no "node without a GPU" selector.
            scheduling_strategy="DEFAULT",
            fn_constructor_kwargs=constructor_kwargs,
            **remote_args,
        )


def classify_stage(dataset: ray.data.Dataset, config: JobConfig, execution: Execution, scaling: Scaling,
                   run_id: str | None, classify: type = RayClassify, runs: tuple[ModelRun, ...] = ()) -> ray.data.Dataset:
    """Preprocessed blocks -> output rows, through the fixed pool of ``classify`` actors (``RayClassify`` or a stand-in)."""
    with _remote_args() as remote_args:
        return dataset.map_batches(
            classify,
            batch_size=scaling.batch_size,
            batch_format="pyarrow",  # the blocks' pixels reach the model as one buffer (runners.ray.blocks)
            compute=scaling.classify_pool(),
            **scaling.predictor_resources(),
            fn_constructor_kwargs={"config": config, "execution": execution, "run_id": run_id,
                                   "concurrency": scaling.calls_per_predictor,
                                   **({"runs": runs} if len(runs) > 1 else {})},
            **remote_args,
        )
