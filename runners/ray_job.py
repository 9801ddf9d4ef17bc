"""python -m runners.ray_job: batch inference on Ray Data, CPU and GPU stages scaled apart.

    python -m runners.ray_job --input s3://bucket/images/ --output s3://bucket/preds/

The pipeline is one chained expression: the planned input files -> ``RayPreprocess`` (an
autoscaling CPU actor pool that reads each file and decodes, resizes and crops to uint8)
-> ``RayClassify`` (a fixed pool of one actor per GPU, model loaded once per actor) -> the
driver, which consumes the stream of predictions (about 100 bytes a row) and commits each
input file's part the moment all its rows have arrived (``runners.parts``): a driver killed
part-way keeps every committed part, and ``--resume`` runs only the rest. With no arguments
it runs the built-in sample on a local Ray. ``--address`` (or ``RAY_ADDRESS``, as ``ray job
submit`` sets it) joins an existing cluster.

Worker loss: Ray Data starts actor pools with ``max_restarts=-1`` and ``max_task_retries=-1``
(``ActorPoolMapOperator._apply_default_remote_args``, Ray 2.60), so a killed actor is
restarted and its task re-run; rows of a re-run block that already arrived are dropped by
their (input file, position), so each row is committed once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import ray
import torch
from ray.data.extensions import ArrowTensorArray

from runners.driver import PreparedJob, finish_job, prepare_job
from runners.job import JobConfig, config_from_args, get_args_parser, run_main
from runners.parts import FILE, ROW, PartCollector, positions, with_position
from runners.ray_placement import placement_summary, record_placement, start_registry
from runners.report import print_summary
from runners.source import InputPlan, read_planned
from runners.stages import Classify, Preprocess, default_batch_size

# Rows per preprocessed block: 64 x 224x224x3 uint8 = 9.6 MB, a comfortable Ray object size.
PREPROCESS_BATCH_ROWS = 64
# CPUs left free on a GPU cluster for the driver, which writes the parts.
RESERVED_CPUS = 1


class RayPreprocess:
    """CPU actor: read each planned input file and yield preprocessed blocks."""

    def __init__(self, plan: InputPlan, config: JobConfig, run_id: str) -> None:
        record_placement(run_id, "preprocess")
        self.plan = plan
        self.preprocess = Preprocess(config)
        self.decode_on_device = config.decode == "gpu"

    def __call__(self, batch: dict[str, np.ndarray]) -> Iterator[pa.Table]:
        for index in batch[FILE].tolist():
            for start, ids, records in read_planned(self.plan, index, PREPROCESS_BATCH_ROWS):
                yield with_position(self._block(ids, records), *positions(index, start, len(ids)))

    def _block(self, ids: list[str], records: pa.RecordBatch) -> pa.Table:
        if self.decode_on_device:
            # --decode gpu: hand the encoded bytes on; the predictor decodes them on its device.
            return pa.table({"id": pa.array(ids, pa.string()), "image": pa.array(self.preprocess.encoded_cells(records), pa.binary())})
        out = self.preprocess(records)
        # Arrow, not a dict of numpy: Ray would turn the None errors of good rows into NaN.
        return pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "pixels": ArrowTensorArray.from_numpy(out.pixels),
                "error": pa.array(out.errors, pa.string()),
            }
        )


class RayClassify:
    """GPU actor (CPU when the cluster has no GPU): the model, loaded once, on one device."""

    def __init__(self, config: JobConfig, run_id: str) -> None:
        record_placement(run_id, "classify")
        # Ray sets CUDA_VISIBLE_DEVICES to this actor's GPU, so it is always cuda:0 here.
        self.classify = Classify(config)
        if self.classify.predictor.device.type == "cpu" and ray.get_gpu_ids():
            print(f"GPU {ray.get_gpu_ids()} was assigned but CUDA is not usable here: the predictor runs on CPU", file=sys.stderr)
        if self.classify.predictor.device.type == "cpu":
            # Ray pins actors to one thread (OMP_NUM_THREADS=1); on CPU the model is the
            # bottleneck by far, so let it use the node's cores.
            torch.set_num_threads(os.cpu_count() or 1)

    def __call__(self, batch: dict[str, np.ndarray]) -> pa.Table:
        if "image" in batch:  # --decode gpu
            table = self.classify.classify_encoded(batch["id"].tolist(), batch["image"].tolist())
        else:
            table = self.classify(batch["id"].tolist(), batch["pixels"], batch["error"].tolist())
        return with_position(table, batch[FILE], batch[ROW])


@dataclass(frozen=True)
class Scaling:
    gpus: int  # GPUs in the cluster; 0: the predictor runs on CPU
    classify_actors: int
    preprocess_actors: int  # autoscaling pool maximum
    batch_size: int


def plan_scaling(config: JobConfig, args: argparse.Namespace) -> Scaling:
    """Size both actor pools from the cluster (or the options)."""
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
    classify = args.num_gpu_actors or max(gpus, 1)
    preprocess = args.num_cpu_actors or max(1, cpus - classify - RESERVED_CPUS)
    if gpus == 0:
        print(f"no GPU in the Ray cluster: the predictor runs on CPU ({classify} actor)", file=sys.stderr)
    return Scaling(gpus, classify, preprocess, default_batch_size(config, gpus > 0))


def build_dataset(job: PreparedJob, scaling: Scaling) -> ray.data.Dataset:
    files = [{FILE: index} for index in range(len(job.pending.files))]
    with warnings.catch_warnings():
        # Only scheduling_strategy below goes through **ray_remote_args, on purpose: its
        # deprecation warning would greet every run with nothing for the user to change.
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated", category=DeprecationWarning)
        decoded = ray.data.from_items(files, override_num_blocks=len(files)).map_batches(
            RayPreprocess,
            batch_size=1,  # one input file per call; the actor streams it in PREPROCESS_BATCH_ROWS blocks
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=scaling.preprocess_actors),
            num_cpus=1,
            # Ray Data places actors with "SPREAD", which may put a decoder on a GPU node's last
            # free CPU and leave the predictor there pending. Ray core's "DEFAULT" (hybrid) policy
            # keeps CPU-only work off GPU nodes while a CPU node has room (scheduler_avoid_gpu_nodes),
            # and still uses a GPU node's spare CPUs when none has. Passed through **ray_remote_args,
            # deprecated for removal in Ray 2.64 (hence the extra's <2.64): its named successor,
            # label_selector, has no "node without a GPU" selector (only in / not in, of values).
            scheduling_strategy="DEFAULT",
            fn_constructor_kwargs={"plan": job.pending, "config": job.config, "run_id": job.run_id},
        )
    return decoded.map_batches(
        RayClassify,
        batch_size=scaling.batch_size,
        compute=classify_pool(scaling),
        num_gpus=1 if scaling.gpus else 0,
        num_cpus=1,
        fn_constructor_kwargs={"config": job.config, "run_id": job.run_id},
    )


def classify_pool(scaling: Scaling) -> ray.data.ActorPoolStrategy:
    """A fixed pool: GPU pools autoscaling from 1 have been seen stuck at 1 (ray#59144).

    On GPUs each actor runs two calls at once, each on its own CUDA stream (see
    ``inference.predictor``): one batch's copy to the device and readback overlap the
    other's compute, and Ray's batching of the next input overlaps both.
    """
    if not scaling.gpus:
        return ray.data.ActorPoolStrategy(size=scaling.classify_actors)
    return ray.data.ActorPoolStrategy(
        size=scaling.classify_actors, max_concurrent_calls_per_actor=2, enable_true_multi_threading=True
    )


def write_parts(dataset: ray.data.Dataset, job: PreparedJob) -> None:
    """Consume the predictions on the driver, committing each input file's part once it is whole."""
    collector = PartCollector(job.parts, job.pending.files)
    # batch_size=None: blocks as they come, no re-batching; rows of a file arrive in any order.
    for batch in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
        collector.add(batch)
    collector.check_complete()


def get_ray_args_parser() -> argparse.ArgumentParser:
    parser = get_args_parser(prog="python -m runners.ray_job", description=__doc__.splitlines()[0])
    group = parser.add_argument_group("ray")
    group.add_argument("--address", help="Ray cluster to join, e.g. ray://head:10001 or auto (default: RAY_ADDRESS, else a local Ray)")
    group.add_argument("--num-gpu-actors", type=_positive, help="predictor actors (default: one per GPU, 1 without GPUs)")
    group.add_argument("--num-cpu-actors", type=_positive, help="max preprocessing actors (default: the cluster's CPUs less one per predictor and one spare)")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the job; returns the manifest."""
    args = get_ray_args_parser().parse_args(argv)
    job = prepare_job(config_from_args(args))
    if job.finished is not None:
        return job.finished
    owns_ray = not ray.is_initialized()  # a notebook or test may have started Ray already
    if owns_ray:
        ray.init(address=args.address, logging_level="WARNING")
    try:
        scaling = plan_scaling(job.config, args)
        registry = start_registry(job.run_id)
        started = time.perf_counter()
        if job.pending.files:
            write_parts(build_dataset(job, scaling), job)
        seconds = time.perf_counter() - started if job.pending.files else 0.0
        placement = placement_summary(registry)
        ray.kill(registry)
    finally:
        if owns_ray:
            ray.shutdown()
    extra = {"packages": ["ray"], "scaling": scaling.__dict__, "placement": placement}
    manifest = finish_job(job, "ray", seconds, extra)
    print_summary(manifest)
    return manifest


if __name__ == "__main__":
    sys.exit(run_main(main))
