"""The pipeline meter: what the Ray pipeline itself can carry, on any machine, GPU or not.

    python -m benchmarks.pipeline_bench --images 4096 --hold-ms 12 [--num-cpu-actors N]

The real Ray job (planning, ``RayPreprocess`` reading raw-format Parquet and resizing, Ray's
object store and batching, the driver's part collector and commits) with the model replaced
by a stand-in that holds each batch of 256 for ``--hold-ms`` (12 ms: what an H100 needs for
ResNet50 in bf16) and returns placeholder rows. Delivered images/s against the stand-in's
rate says whether the plumbing or the "model" is the limit; start-up and CPU time per image
per stage (Ray Data's own per-operator accounting) say where the plumbing's time goes.
Appends one JSON row to ``benchmarks/results/pipeline.jsonl``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import ray

from benchmarks.common import append_result
from job.config import JobConfig
from job.driver import EngineRun, finish_job, prepare_job
from job.parts import with_position
from job.rows import prediction_table
from job.stages import Batch, PixelBatch
from job.timeline import DEVICE_SECONDS
from runners import make_dataset
from runners.ray_blocks import batch_of
from runners.ray_cluster import RaySession, plan_scaling
from runners.ray_job import build_dataset, collect_parts
from runners.ray_placement import start_registry

MODEL_BATCH = 256  # the GPU batch the stand-in holds for --hold-ms
TOPK = 5


class HoldingClassify:
    """Stand-in for ``RayClassify``: holds each batch as long as the model would, then answers rows."""

    hold_seconds = 0.012  # set per run, before Ray pickles the class

    def __init__(self, config: JobConfig, run_id: str, images: int, concurrency: int) -> None:
        self.topk = config.topk

    def __call__(self, block: pa.Table) -> pa.Table:
        batch = batch_of(block)
        started = time.perf_counter()
        time.sleep(self.hold_seconds * len(batch.ids) / MODEL_BATCH)
        table = placeholder_rows(batch, self.topk)
        seconds = np.full(table.num_rows, (time.perf_counter() - started) / max(table.num_rows, 1))
        return table.append_column(DEVICE_SECONDS, pa.array(seconds))


def placeholder_rows(batch: Batch, topk: int) -> pa.Table:
    """Output rows with label 0 for every row that decoded: the shape of the real answer, no model."""
    assert isinstance(batch, PixelBatch), "the meter runs raw-format input, decoded on the CPU"
    ok = sum(e is None for e in batch.errors)
    predictions = SimpleNamespace(label=np.zeros(ok, np.int64), score=np.zeros(ok, np.float32),
                                  topk_labels=np.zeros((ok, topk), np.int64), topk_scores=np.zeros((ok, topk), np.float32))
    return with_position(prediction_table(batch.ids, batch.errors, predictions), batch.files, batch.rows)


def cpu_seconds_by_operator(stats: str) -> dict[str, float]:
    """Ray Data's per-operator "Remote cpu time: ... <total> total" from ``Dataset.stats()``, in seconds."""
    found: dict[str, float] = {}
    for operator, body in re.findall(r"^Operator \d+ (.+?): (.*?)(?=^Operator |\Z)", stats, re.S | re.M):
        total = re.search(r"Remote cpu time: .*? ([\d.]+)(us|ms|s) total", body)
        if total:
            found[operator] = float(total.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6}[total.group(2)]
    return found


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--rows-per-file", type=int, default=256)
    parser.add_argument("--hold-ms", type=float, default=12.0, help="stand-in model time per batch of 256 (default: 12, an H100)")
    parser.add_argument("--num-cpu-actors", type=int, help="preprocessing actors (default: the job's own rule)")
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="pipeline-bench-")
    make_dataset.main(["--output", f"{workdir}/in", "--images", str(args.images), "--format", "raw",
                       "--rows-per-file", str(args.rows_per_file)])
    HoldingClassify.hold_seconds = args.hold_ms / 1000
    config = JobConfig(input=f"{workdir}/in", output=f"{workdir}/out", weights="random", batch_size=MODEL_BATCH, decode="cpu")
    with RaySession(None):
        job = prepare_job(config)
        scaling = plan_scaling(job.config, 1, args.num_cpu_actors, len(job.pending.files))
        registry = start_registry(job.run_id)  # the actors report where they run, as in the job
        started, driver_cpu = time.perf_counter(), time.process_time()
        dataset = build_dataset(job, scaling, classify=HoldingClassify)
        collector, busy = collect_parts(dataset, job)
        seconds = time.perf_counter() - started
        # The driver's own process: Ray's streaming executor, iter_batches, the part collector, the commits.
        cpu = {**cpu_seconds_by_operator(dataset.stats()), "driver": time.process_time() - driver_cpu}
        ray.kill(registry)
    manifest = finish_job(job, "ray-pipeline-meter", seconds, EngineRun({"scaling": scaling.to_dict()}, collector.progress, busy, 1))
    standin_rate = MODEL_BATCH / (args.hold_ms / 1000)
    row = {
        "benchmark": "pipeline", "images": manifest.counts.rows_out, "hold_ms_per_256": args.hold_ms,
        "standin_images_per_sec": round(standin_rate, 1), "seconds": manifest.seconds,
        "images_per_sec": manifest.images_per_sec, "startup_seconds": manifest.timeline.startup_seconds,
        "steady_images_per_sec": manifest.timeline.steady_images_per_sec,
        "steady_of_standin": round((manifest.timeline.steady_images_per_sec or 0) / standin_rate, 3),
        "cpu_ms_per_image": {op: round(1000 * s / manifest.counts.rows_out, 3) for op, s in cpu.items()},
        "scaling": scaling.to_dict(), "note": args.note, "hardware": manifest.hardware, "versions": manifest.versions,
    }
    append_result("pipeline", row)
    print(f"pipeline meter: {row['images']} raw images, stand-in {standin_rate:.0f} images/s; delivered "
          f"{row['images_per_sec']} images/s whole, {row['steady_images_per_sec']} steady ({row['steady_of_standin']:.0%} of "
          f"the stand-in), startup {row['startup_seconds']} s; CPU ms/image {row['cpu_ms_per_image']}")
    return row


if __name__ == "__main__":
    main()
