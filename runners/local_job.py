"""python -m runners.local_job: one machine, plain PyTorch: the baseline the engines must beat.

    python -m runners.local_job --input s3://bucket/images/ --output ./preds/ --workers 7

What a user writes without an engine: a ``torch.utils.data.IterableDataset`` over the
planned input files, sharded across ``DataLoader`` worker processes (``get_worker_info``),
each worker reading its files with pyarrow and yielding preprocessed uint8 batches; the
main process classifies them on one device (CUDA when there is one, with pinned memory) and
commits each input file's part as soon as all its rows are in (``job.parts``).
Same preprocessing, model and output as the Ray, Spark and SageMaker jobs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from job.cli import RESUME_HINT, config_from_args, get_args_parser, positive_int, run_main
from inference import choose_device
from job.config import JobConfig, with_decode_for
from job.driver import EngineRun, PreparedJob, run_job
from job.parts import PartCollector
from job.plan import InputPlan
from job.stages import Batch, Classify, PixelBatch, Preprocess
from job.timeline import device_seconds_of

# Batches each worker keeps ready (DataLoader's default): enough to hide a slow file open.
PREFETCH_BATCHES = 2
# Workers start from a fresh interpreter: the driver has used the S3 client and torch's
# thread pool, and neither is safe to fork (a forked worker can hang on an inherited lock).
DEFAULT_START_METHOD = "spawn"


class PlannedFiles(IterableDataset):
    """The planned input files, preprocessed: yields (batch, pixels) per ``batch_rows`` rows.

    Each DataLoader worker takes every ``num_workers``-th file, so every row is read once. The
    pixels travel as a tensor beside the batch, so the DataLoader shares and pins them.
    """

    def __init__(self, plan: InputPlan, config: JobConfig, batch_rows: int) -> None:
        self.plan, self.config, self.batch_rows = plan, config, batch_rows

    def __iter__(self) -> Iterator[tuple[Batch, torch.Tensor | None]]:
        worker = get_worker_info()
        shard = range(len(self.plan.files)) if worker is None else range(worker.id, len(self.plan.files), worker.num_workers)
        preprocess = Preprocess(self.config)
        for index in shard:
            for batch in preprocess.read(self.plan, index, self.batch_rows):
                if isinstance(batch, PixelBatch):  # (K, crop, crop, 3) uint8, handed over as a shared tensor
                    yield dataclasses.replace(batch, pixels=None), torch.from_numpy(batch.pixels)
                else:
                    yield batch, None


def run_locally(job: PreparedJob, workers: int, start_method: str) -> EngineRun:
    """Classify every pending row in the main process; commit each input file's part once all its rows are in."""
    job.config = with_decode_for(job.config, has_gpu=choose_device().type == "cuda")
    classify = Classify(job.config, images=job.pending.rows)
    workers = min(workers, len(job.pending.files))  # a file is the unit of work: more workers would idle
    loader = DataLoader(
        PlannedFiles(job.pending, job.config, classify.batch_size),
        batch_size=None,  # the dataset yields whole batches
        num_workers=workers,
        pin_memory=classify.predictor.device.type == "cuda",
        multiprocessing_context=start_method if workers else None,
        prefetch_factor=PREFETCH_BATCHES if workers else None,
    )
    collector, device_seconds = PartCollector(job.parts, job.pending.files), 0.0
    for batch, pixels in loader:
        if pixels is not None:
            batch = dataclasses.replace(batch, pixels=pixels.numpy())  # pinned memory stays pinned
        table = classify(batch)
        device_seconds += device_seconds_of(table)
        collector.add(table)
    collector.check_complete()
    settings = {"workers": workers, "start_method": start_method, "batch_size": classify.batch_size,
                "device": str(classify.predictor.device), "compiled": classify.compiled}
    return EngineRun(settings={"local": settings}, progress=collector.progress, device_seconds=device_seconds)


def get_local_args_parser() -> argparse.ArgumentParser:
    parser = get_args_parser(prog="python -m runners.local_job", description=__doc__.splitlines()[0])
    group = parser.add_argument_group("local")
    group.add_argument("--workers", type=positive_int(0), default=max(1, (os.cpu_count() or 1) - 1),
                       help="DataLoader worker processes that read and preprocess; 0: in the main process "
                            "(default: CPUs - 1, at least 1)")
    group.add_argument("--start-method", choices=("spawn", "forkserver", "fork"), default=DEFAULT_START_METHOD,
                       help=f"how workers start (default: {DEFAULT_START_METHOD}; fork is faster to start but unsafe "
                            "once the S3 client or torch threads are running)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the job; returns the manifest."""
    args = get_local_args_parser().parse_args(argv)
    return run_job("local", config_from_args(args), lambda job: run_locally(job, args.workers, args.start_method))


def cli() -> int:
    """The command: ``main`` with user-fixable errors as one line and exit code 2."""
    return run_main(main, interrupted_hint=RESUME_HINT)


if __name__ == "__main__":
    sys.exit(cli())
