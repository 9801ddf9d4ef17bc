"""python -m runners.local_job: one machine, plain PyTorch: the baseline the engines must beat.

    python -m runners.local_job --input s3://bucket/images/ --output ./preds/ --workers 7

What a user writes without an engine: a ``torch.utils.data.IterableDataset`` over the
planned input files, sharded across ``DataLoader`` worker processes (``get_worker_info``),
each worker reading its files with pyarrow and yielding preprocessed uint8 batches; the
main process classifies them on one device (CUDA when there is one, with pinned memory) and
commits each input file's part as soon as all its rows are in (``runners.parts``); the
shared driver verifies them all and writes the manifest.
Same preprocessing, model and output as the Ray, Spark and SageMaker jobs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from inference import choose_device
from runners.driver import PreparedJob, finish_job, prepare_job
from runners.job import JobConfig, JobError, config_from_args, get_args_parser, run_main
from runners.report import print_summary
from runners.parts import PartCollector, positions, with_position
from runners.source import InputPlan, read_planned
from runners.stages import Classify, Preprocess, default_batch_size

# Batches each worker keeps ready (DataLoader's default): enough to hide a slow file open.
PREFETCH_BATCHES = 2
# Workers start from a fresh interpreter: the driver has used the S3 client and torch's
# thread pool, and neither is safe to fork (a forked worker can hang on an inherited lock).
DEFAULT_START_METHOD = "spawn"


class PlannedFiles(IterableDataset):
    """The planned input files, preprocessed: yields one dict per batch of ``batch_rows`` rows.

    Each DataLoader worker takes every ``num_workers``-th file, so every row is read once.
    """

    def __init__(self, plan: InputPlan, config: JobConfig, batch_rows: int) -> None:
        self.plan, self.config, self.batch_rows = plan, config, batch_rows

    def __iter__(self) -> Iterator[dict]:
        worker = get_worker_info()
        shard = range(len(self.plan.files)) if worker is None else range(worker.id, len(self.plan.files), worker.num_workers)
        preprocess = Preprocess(self.config)
        for index in shard:
            for start, ids, records in read_planned(self.plan, index, self.batch_rows):
                where = {"file": index, "start": start, "ids": ids}
                if self.config.decode == "gpu":  # decoded on the device by Classify.classify_encoded
                    yield {**where, "images": preprocess.encoded_cells(records), "errors": None}
                    continue
                out = preprocess(records)
                # (N, crop, crop, 3) uint8; a tensor so the DataLoader can share and pin it.
                yield {**where, "images": torch.from_numpy(out.pixels), "errors": out.errors}


def run(job: PreparedJob, workers: int, start_method: str, batch_size: int) -> None:
    """Classify every pending row in the main process; commit each input file's part once all its rows are in."""
    classify = Classify(job.config)
    loader = DataLoader(
        PlannedFiles(job.pending, job.config, batch_size),
        batch_size=None,  # the dataset yields whole batches
        num_workers=workers,
        pin_memory=classify.predictor.device.type == "cuda",
        multiprocessing_context=start_method if workers else None,
        prefetch_factor=PREFETCH_BATCHES if workers else None,
    )
    collector = PartCollector(job.parts, job.pending.files)
    for batch in loader:
        table = classify.classify_either(batch["ids"], _host(batch["images"]), batch["errors"])
        collector.add(with_position(table, *positions(batch["file"], batch["start"], len(batch["ids"]))))
    collector.check_complete()


def _host(images: torch.Tensor | list) -> np.ndarray | list:
    """Pixels as the numpy the predictor takes (pinned memory stays pinned); encoded cells as they are."""
    return images.numpy() if isinstance(images, torch.Tensor) else images


def get_local_args_parser() -> argparse.ArgumentParser:
    parser = get_args_parser(prog="python -m runners.local_job", description=__doc__.splitlines()[0])
    group = parser.add_argument_group("local")
    group.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1) - 1),
                       help="DataLoader worker processes that read and preprocess; 0: in the main process "
                            "(default: CPUs - 1, at least 1)")
    group.add_argument("--start-method", choices=("spawn", "forkserver", "fork"), default=DEFAULT_START_METHOD,
                       help=f"how workers start (default: {DEFAULT_START_METHOD}; fork is faster to start but unsafe "
                            "once the S3 client or torch threads are running)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the job; returns the manifest."""
    args = get_local_args_parser().parse_args(argv)
    if args.workers < 0:
        raise JobError(f"--workers must be 0 (in-process) or more, got {args.workers}")
    job = prepare_job(config_from_args(args))
    if job.finished is not None:
        return job.finished
    device = choose_device()  # the device Classify takes
    batch_size = default_batch_size(job.config, device.type == "cuda")
    workers = min(args.workers, len(job.pending.files))  # a file is the unit of work: more workers would idle
    started = time.perf_counter()
    if job.pending.files:
        run(job, workers, args.start_method, batch_size)
    seconds = time.perf_counter() - started
    extra = {"local": {"workers": workers, "start_method": args.start_method, "batch_size": batch_size,
                       "device": str(device)}}
    manifest = finish_job(job, "local", seconds, extra)
    print_summary(manifest)
    return manifest


if __name__ == "__main__":
    sys.exit(run_main(main))
