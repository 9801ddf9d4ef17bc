"""The pipeline meter: what the Ray pipeline itself can carry, on any machine, GPU or not.

    python -m benchmarks.pipeline_bench --images 4096 --hold-ms 12 [--num-cpu-actors N] [--embeddings with|only]

The real Ray job (planning, ``RayPreprocess`` reading raw-format Parquet and resizing, Ray's
object store and batching, the driver's part collector and commits) with the model replaced
by a stand-in that holds each batch of 256 for ``--hold-ms`` (12 ms: what an H100 needs for
ResNet50 in bf16) and returns placeholder rows (``--embeddings``: with random 2048-d embeddings
in the plan's dtype, what the driver and the part writer then carry). Delivered images/s against the stand-in's
rate says whether the plumbing or the "model" is the limit; start-up and CPU time per image
per stage (Ray Data's own per-operator accounting) say where the plumbing's time goes.
Appends one JSON row to ``benchmarks/results/pipeline.jsonl``, with the mean size of a part
per 1,000 rows.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import ray

from benchmarks.common import add_results_option, append_result
from benchmarks.standin_model import placeholder_predictions
from job import driver
from job.config import JobConfig
from job.engine import EngineRun, Job
from job.execution import Execution
from job.output.parts import with_position
from job.output.rows import prediction_table
from job.stages import Batch, PixelBatch
from job.timeline import with_model_time
from runners import make_dataset, ray_job
from job.several.stages import rows_blob
from runners.ray.blocks import batch_of
from runners.ray.cluster import RaySession, plan_scaling
from runners.ray.placement import start_registry

MODEL_BATCH = 256  # the GPU batch the stand-in holds for --hold-ms


class HoldingClassify:
    """Stand-in for ``RayClassify``: holds each batch as long as the model would, then answers rows."""

    hold_seconds = 0.012  # set per run, before Ray pickles the class

    def __init__(self, config: JobConfig, execution: Execution, run_id: str, concurrency: int) -> None:
        self.execution, self.crop = execution, execution.recipe.crop
        self.random = np.random.default_rng(0)

    def __call__(self, block: pa.Table) -> pa.Table:
        batch = batch_of(block, self.crop)
        started = time.perf_counter()
        time.sleep(self.hold_seconds * len(batch.ids) / MODEL_BATCH)
        # Stamped as job.stages.Classify stamps its rows: the timeline's events are these calls; handed to the driver
        # as RayClassify hands them (job.several.rows_blob: one model's rows here).
        rows = with_model_time(placeholder_rows(batch, self.execution, self.random), time.perf_counter() - started)
        return rows_blob([(0, rows)])


def placeholder_rows(batch: Batch, execution: Execution, random: np.random.Generator) -> pa.Table:
    """Output rows with label 0 for every row that decoded, and random embeddings when the plan asks for
    them (``benchmarks.standin_model.placeholder_predictions``): the shape of the real answer, no model."""
    assert isinstance(batch, PixelBatch), "the meter runs raw-format input, decoded on the CPU"
    ok = sum(e is None for e in batch.errors)
    predictions = placeholder_predictions(ok, execution.topk, execution.embeddings, execution.model.embedding_dim,
                                          execution.predictions, random)
    return with_position(prediction_table(batch.ids, batch.errors, predictions, execution), batch.files, batch.rows)


def cpu_seconds_by_operator(stats: str) -> dict[str, float]:
    """Ray Data's per-operator "Remote cpu time: ... <total> total" from ``Dataset.stats()``, in seconds."""
    found: dict[str, float] = {}
    for operator, body in re.findall(r"^Operator \d+ (.+?): (.*?)(?=^Operator |\Z)", stats, re.S | re.M):
        total = re.search(r"Remote cpu time: .*? ([\d.]+)(us|ms|s) total", body)
        if total:
            found[operator] = float(total.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6}[total.group(2)]
    return found


def metered_run(job: Job, session: RaySession, args: argparse.Namespace, cpu: dict[str, float]) -> EngineRun:
    """``ray_job.run_on_ray`` with the stand-in model, and each operator's CPU seconds put in ``cpu``."""
    scaling = plan_scaling(job.execution.batch_size, 1, args.num_cpu_actors, len(job.pending.files))
    registry = start_registry(job.run_id)  # the actors report where they run, as in the job
    driver_cpu = time.process_time()
    dataset = ray_job.build_dataset(job, scaling, classify=HoldingClassify)
    collectors = ray_job.collect_parts(dataset, job)
    # The driver's own process: Ray's streaming executor, iter_batches, the part collector, the commits.
    cpu.update({**cpu_seconds_by_operator(dataset.stats()), "driver": time.process_time() - driver_cpu})
    ray.kill(registry)
    return collectors.report({"scaling": scaling.to_dict()})


def part_kib_per_1000_rows(output: Path, manifest: dict) -> float:
    """The parts' bytes on disk per 1,000 output rows, in KiB."""
    size = sum((output / name).stat().st_size for name in manifest["files"])
    return round(size / 1024 / manifest["counts"]["rows_out"] * 1000, 1)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--rows-per-file", type=int, default=256)
    parser.add_argument("--hold-ms", type=float, default=12.0, help="stand-in model time per batch of 256 (default: 12, an H100)")
    parser.add_argument("--num-cpu-actors", type=int, help="preprocessing actors (default: the job's own rule)")
    parser.add_argument("--embeddings", choices=("off", "with", "only"), default="off",
                        help="the job's --embeddings: rows carry a 2048-d embedding beside or instead of predictions")
    parser.add_argument("--embedding-dtype", choices=("float16", "float32"), default="float16")
    parser.add_argument("--note", default="")
    add_results_option(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as workdir:  # raw input: 200 KB an image, gone after
        return metered(args, workdir)


def metered(args: argparse.Namespace, workdir: str) -> dict:
    """The meter's one run in ``workdir``: its input made there, the job run, the row appended and printed."""
    make_dataset.main(["--output", f"{workdir}/in", "--images", str(args.images), "--format", "raw",
                       "--rows-per-file", str(args.rows_per_file)])
    HoldingClassify.hold_seconds = args.hold_ms / 1000
    cpu: dict[str, float] = {}
    # The Ray job as users run it (the driver's plan, lease, parts, verify, manifest), its model a stand-in.
    meter = dataclasses.replace(ray_job.ENGINE, name="ray-pipeline-meter",
                                execute=lambda job, session, job_args: metered_run(job, session, args, cpu))
    manifest = driver.main(meter, ["--input", f"{workdir}/in", "--output", f"{workdir}/out", "--weights", "random",
                                   "--batch-size", str(MODEL_BATCH), "--decode", "cpu", "--embeddings", args.embeddings,
                                   "--embedding-dtype", args.embedding_dtype])
    images, timeline = manifest["counts"]["rows_out"], manifest["timeline"]
    standin_rate = MODEL_BATCH / (args.hold_ms / 1000)
    row = {
        "benchmark": "pipeline", "images": images, "hold_ms_per_256": args.hold_ms,
        "embeddings": args.embeddings, "embedding_dtype": args.embedding_dtype if args.embeddings != "off" else None,
        "part_kib_per_1000_rows": part_kib_per_1000_rows(Path(workdir, "out"), manifest),
        "standin_images_per_sec": round(standin_rate, 1), "seconds": manifest["seconds"],
        "images_per_sec": manifest["images_per_sec"], "startup_seconds": timeline["startup_seconds"],
        "steady_images_per_sec": timeline["steady_images_per_sec"],
        "steady_of_standin": round((timeline["steady_images_per_sec"] or 0) / standin_rate, 3),
        "cpu_ms_per_image": {op: round(1000 * s / images, 3) for op, s in cpu.items()},
        "scaling": manifest["settings"]["scaling"], "note": args.note, "hardware": manifest["hardware"],
        "versions": manifest["versions"],
    }
    append_result(args.results, row)
    print(f"pipeline meter: {row['images']} raw images, stand-in {standin_rate:.0f} images/s; delivered "
          f"{row['images_per_sec']} images/s whole, {row['steady_images_per_sec']} steady ({row['steady_of_standin']:.0%} of "
          f"the stand-in), startup {row['startup_seconds']} s; CPU ms/image {row['cpu_ms_per_image']}; "
          f"parts {row['part_kib_per_1000_rows']} KiB per 1,000 rows")
    return row


if __name__ == "__main__":
    main()
