"""The GPU stage piece by piece, on synthetic 500x375 JPEGs held in memory (no I/O, no Ray).

    python -m benchmarks.gpu_stage_bench                       # on a GPU: the GPU stage's figures in BENCHMARKS.md
    python -m benchmarks.gpu_stage_bench --batch 4 --seconds 0 # anywhere: a smoke run on the CPU device

One JSON row per measurement in benchmarks/results/gpu_stage.jsonl:
- ``model``: the predictor alone on a device batch (eager, then compiled default and reduce-overhead);
- ``decode``: one batched decode call per batch, for each decoder available (nvimgcodec, nvjpeg);
- ``resize``: the batched roi_align resize + crop of already-decoded images;
- ``stage``: the whole device stage, JPEG bytes -> predictions (decode + resize + model), on one
  thread and on two threads with their own streams (how the Ray GPU actor runs it).
Warm-up is not timed; the device is synchronised around the clock; the image count is the work done.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from benchmarks.common import add_results_option, append_result
from inference import Predictor, choose_device, load_model
from job.execution import DEFAULT_TOPK, default_precision, this_machine
from preprocess.device_decode import DECODERS, JpegDecoder, nvimgcodec_available
from preprocess.device_resize import resize_center_crop_batch
from preprocess.device_stage import DeviceStage
from preprocess.split_decode import preprocess_routed
from preprocess.routing import DecodeRouter
from preprocess.recipe import Recipe
from job.sample.synthetic import encode, synthetic_image

WARMUP_CALLS = 3  # cuDNN autotuning, nvJPEG/nvImageCodec buffers, first allocations


def make_jpegs(count: int, size: tuple[int, int] = (500, 375)) -> list[bytes]:
    rng = np.random.default_rng(0)
    base = [encode(synthetic_image(rng, *size), "jpeg") for _ in range(min(count, 32))]
    return [base[i % len(base)] for i in range(count)]


def timed(work: Callable[[], object], device: torch.device, seconds: float, min_calls: int = 3) -> tuple[int, float]:
    """(calls, elapsed): ``work`` repeated for at least ``seconds`` and ``min_calls``, warm-up excluded."""
    for _ in range(WARMUP_CALLS):
        work()
    _sync(device)
    started, calls = time.perf_counter(), 0
    while calls < min_calls or time.perf_counter() - started < seconds:
        work()
        calls += 1
    _sync(device)
    return calls, time.perf_counter() - started


def bench_model(device: torch.device, batch: int, seconds: float, precision: str, compile: bool) -> list[dict]:
    model, rows = load_model("random"), []
    images = torch.rand((batch, 3, 224, 224), device=device) * 255  # (B, 3, H, W) float, as the stage makes
    modes = [None] + (["default", "reduce-overhead"] if compile else [])
    for mode in modes:
        started = time.perf_counter()
        predictor = Predictor(model, device, precision, DEFAULT_TOPK, compile=mode is not None, batch_size=batch,
                              compile_mode=mode or "default")
        setup = time.perf_counter() - started
        calls, elapsed = timed(lambda: predictor.predict_images(images), device, seconds)
        rows.append(_row("model", batch * calls, elapsed, compile=mode or "eager", precision=precision, setup_seconds=round(setup, 2)))
    return rows


def bench_decode_and_resize(device: torch.device, jpegs: list[bytes], seconds: float) -> list[dict]:
    rows, size = [], Recipe()
    for name in _decoders(device):
        decoder = JpegDecoder(device, name)
        calls, elapsed = timed(lambda: decoder.decode(jpegs), device, seconds)
        rows.append(_row("decode", len(jpegs) * calls, elapsed, decoder=name))
    decoded = JpegDecoder(device).decode(jpegs)
    calls, elapsed = timed(lambda: resize_center_crop_batch(decoded, size), device, seconds)
    rows.append(_row("resize", len(jpegs) * calls, elapsed, method="roi_align canvas"))
    return rows


def bench_stage(device: torch.device, jpegs: list[bytes], seconds: float, precision: str, compile: bool, threads: int) -> dict:
    predictor = Predictor(load_model("random"), device, precision, DEFAULT_TOPK, compile=compile, batch_size=len(jpegs))
    stage = DeviceStage(device)
    routed = preprocess_routed(jpegs, DecodeRouter("gpu"))  # the CPU workers' part, not timed here

    def one_batch() -> None:
        with predictor.stream():
            predictor.predict_images(stage(routed).images)

    # One pool for the whole measurement, as the Ray GPU actor keeps its threads: each thread has its own CUDA
    # stream (``Predictor.stream``), and a pool made per call would bring new threads, so new streams, every call,
    # whose allocations the caching allocator cannot serve from blocks it cached on the last call's streams.
    with ThreadPoolExecutor(threads) as pool:
        calls, elapsed = timed(lambda: list(pool.map(lambda _: one_batch(), range(threads))), device, seconds)
    return _row("stage", len(jpegs) * threads * calls, elapsed, decoder=stage.decoder.name, precision=precision,
                compile="default" if compile else "eager", threads=threads)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--batch", type=int, default=256, help="images per device call (256: the Ray GPU batch)")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per measurement, after warm-up")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled runs (a compile takes 10-60 s)")
    args = parser.parse_args(argv)
    device = choose_device()
    precision = default_precision(this_machine())  # what a job on this machine runs
    jpegs = make_jpegs(args.batch)
    compiles = [False] if args.no_compile or device.type != "cuda" else [False, True]
    rows = bench_model(device, args.batch, args.seconds, precision, compile=True in compiles)
    rows += bench_decode_and_resize(device, jpegs, args.seconds)
    for compile in compiles:
        rows += [bench_stage(device, jpegs, args.seconds, precision, compile, threads) for threads in (1, 2)]
    for row in rows:
        row.update(batch=args.batch, device=str(device), image_size="500x375")
        append_result(args.results, row)
        print(row["what"], {k: v for k, v in row.items() if k not in ("what", "hardware", "versions")})
    return rows


def _decoders(device: torch.device) -> list[str]:
    if device.type != "cuda":
        return ["cpu"]
    return [name for name in DECODERS if name != "cpu" and (name != "nvimgcodec" or nvimgcodec_available())]


def _row(what: str, images: int, elapsed: float, **config: object) -> dict:
    return {"what": what, "images": images, "seconds": round(elapsed, 3), "images_per_sec": round(images / elapsed, 1), **config}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


if __name__ == "__main__":
    main()
