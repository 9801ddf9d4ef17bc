"""python -m runners.ray_job: batch inference on Ray Data, CPU and GPU stages scaled apart.

    python -m runners.ray_job --input s3://bucket/images/ --output s3://bucket/preds/

The pipeline is one chained expression (its stages in ``runners.ray.stages``, the classification
shared with the API, ``runners.ray.api``): the planned input files -> ``RayPreprocess`` (a CPU
actor pool that reads each file and decodes, resizes and crops to uint8) -> ``RayClassify`` (a
fixed pool of one actor per GPU, model loaded once per actor) -> the driver, which consumes
the stream of predictions (about 100 bytes a row) and commits each input file's part the
moment all its rows have arrived (``job.output.parts``). With no arguments it runs the built-in
sample on a local Ray; ``--address`` (or ``RAY_ADDRESS``, as ``ray job submit`` sets it)
joins an existing cluster. Ray starts while the driver plans the input (``job.driver``).

Decode mode, batch size, precision and compile come decided in the ``Job`` (``job.execution``);
with ``--decode auto`` the predictors' idle share reaches the decoders through ``runners.ray.feedback``.

Worker loss: Ray Data would start actor pools with ``max_restarts=-1`` and ``max_task_retries=-1``
(``ActorPoolMapOperator._apply_default_remote_args``, Ray 2.60); both pools pass a bounded budget
instead (``runners.ray.cluster.ACTOR_RESTARTS``), so a killed actor is restarted and its task re-run
a few times, never for ever. Rows of a re-run block that already arrived are dropped by their
(input file, position), so each row is committed once. Memory: each actor declares its estimate to
Ray and the pools are sized to the cluster's memory (``runners.ray.sizing``); workers that Ray's
memory monitor keeps killing end the run in one line (``runners.ray.memory_watch``).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import closing

from runners import require_extra

require_extra("ray", __name__)  # before ray's import: a missing extra is one line, not a traceback
import ray  # noqa: E402

from job.cli import non_negative_seconds, positive_int
from job.engine import Engine, EngineRun, Job
from job.execution import Capabilities
from job.output.parts import FILE
from job.several.stages import PartCollectors, rows_of_blob
from runners.ray.accelerators import CUDA, Accelerator
from runners.ray.cluster import DEFAULT_GPU_WAIT_S, RaySession, Scaling, plan_scaling
from runners.ray.feedback import start_board
from runners.ray.glue import add_glue_argument, check_glue_table, with_glue_registration
from runners.ray.placement import alive_nodes, placement_summary, recovery, start_registry
from runners.ray.stages import RayClassify, RayPreprocess, classify_stage, preprocess_stage

__all__ = ["ENGINE", "RayClassify", "RayPreprocess", "build_dataset", "cli", "main"]


def build_dataset(job: Job, scaling: Scaling, classify: type = RayClassify,
                  preprocess: type = RayPreprocess) -> ray.data.Dataset:
    """The pipeline: planned files -> ``preprocess`` -> ``classify`` (``RayPreprocess``, ``RayClassify``, or stand-ins).

    The classification stage is the API's (``runners.ray.api.classify``): one pipeline, two ways in.
    """
    files = [{FILE: index} for index in range(len(job.pending.files))]
    several = job.models if len(job.models) > 1 else ()  # several models (job.several): every one in each actor
    kwargs = {"plan": job.pending, "config": job.config, "execution": job.execution, "run_id": job.run_id,
              **({"runs": several} if several else {})}
    # batch_size=1: one input file per call; the actor streams it in PREPROCESS_BATCH_ROWS blocks.
    decoded = preprocess_stage(ray.data.from_items(files, override_num_blocks=len(files)), preprocess, scaling, 1, kwargs)
    return classify_stage(decoded, job.config, job.execution, scaling, job.run_id, classify, several)


def collect_parts(dataset: ray.data.Dataset, job: Job) -> PartCollectors:
    """Consume the predictions on the driver, committing each input file's part (each model's, in its own table) once
    it is whole. Returns the collectors: their progress is each table's timeline, their model seconds and decodes the
    run's."""
    collectors = PartCollectors(job.runs, job.pending.files)
    # batch_size=None: blocks as they come, no re-batching; rows of a file arrive in any order.
    batches = iter(dataset.iter_batches(batch_format="pyarrow", batch_size=None))
    # closing: a run the collector stops (a DataError) shuts Ray Data's executor down now, not
    # whenever the traceback holding the iterator is freed (meanwhile it runs on and logs).
    with closing(batches):
        for batch in batches:
            collectors.add(rows_of_blob(batch))
    collectors.check_complete()
    return collectors


def run_on_ray(job: Job, session: RaySession, args: argparse.Namespace, classify: type = RayClassify,
               preprocess: type = RayPreprocess) -> EngineRun:
    """Run the pipeline on the pending files (each stage's actor: ours, or a test's stand-in); job.driver does the rest."""
    crop = max(run.execution.recipe.crop for run in job.runs)  # several models: the largest pixels a row carries
    scaling = plan_scaling(job.read_rows, args.num_gpu_actors, args.num_cpu_actors, len(job.pending.files),
                           session.accelerator, crop=crop, max_pixels=job.config.max_pixels)
    helpers = [start_registry(job.run_id), *([start_board(job.run_id)] if job.execution.auto_adapts else [])]
    nodes = alive_nodes()
    try:
        with session.running():
            collectors = session.unwrap_errors(
                lambda: collect_parts(build_dataset(job, scaling, classify, preprocess), job), scaling)
        placement, chosen = placement_summary(helpers[0], session.accelerator.resource)
    finally:
        for actor in helpers:
            ray.kill(actor)
    settings = {"scaling": scaling.to_dict(), "placement": placement, "predictors": chosen.get("classify", {}),
                "recovery": recovery(nodes, placement, collectors.repeated)}
    return collectors.report(settings, predictors=scaling.classify_actors)


def start_session(args: argparse.Namespace, accelerator: Accelerator = CUDA) -> RaySession:
    """The job's Ray: ``--address``, the GPUs ``--num-gpu-actors`` asks for and ``--gpu-wait`` waits for.

    ``accelerator``: the Ray resource a predictor holds (``GPU``; a test without CUDA names its stand-in).
    """
    return RaySession(args.address, args.verbose, gpu_actors=args.num_gpu_actors, gpu_wait_s=args.gpu_wait,
                      accelerator=accelerator)


def add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ray")
    group.add_argument("--address", help="Ray cluster to join: its head's host:port, ray://head:10001, or auto (the cluster "
                                          "`ray start` runs on this machine); not given: RAY_ADDRESS (which `ray job "
                                          "submit` sets), else a new local Ray, never a cluster already running here")
    group.add_argument("--num-gpu-actors", type=positive_int(),
                       help="predictor actors, one GPU each: the run waits for that many GPUs (asking the autoscaler) "
                            "and stops if they do not come; not given: one per GPU the cluster has once any wait ends ("
                            "when no GPU is up but a node type the cluster's autoscaler reports can bring GPUs, the run "
                            "first asks for one and waits as --num-gpu-actors 1 does), 1 on CPU when none is up or can come")
    group.add_argument("--gpu-wait", type=non_negative_seconds, default=DEFAULT_GPU_WAIT_S, metavar="SECONDS",
                       help="how long the run waits for the GPUs it asks for (--num-gpu-actors, or one a node type can "
                            "bring) to join; 0 without --num-gpu-actors: run on the "
                            "nodes that are up, without waiting for a GPU node type")
    group.add_argument("--num-cpu-actors", type=positive_int(),
                       help="preprocessing actors; not given: the cluster's CPUs less one per predictor and one spare")
    add_glue_argument(group)


ENGINE = Engine(
    name="ray", module="runners.ray_job", description=__doc__.splitlines()[0],
    capabilities=Capabilities(),  # every decode mode; auto adapts through runners.ray.feedback
    add_arguments=add_ray_arguments, start=start_session, execute=run_on_ray,
    packages=("ray",),
    compare_options=("--address", "local"),  # a fresh local Ray, never a cluster that happens to run here
    check=check_glue_table,
)
main, cli = with_glue_registration(ENGINE)  # job.driver's commands, then --glue-table's registration

if __name__ == "__main__":
    sys.exit(cli())
