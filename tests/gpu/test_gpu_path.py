"""The GPU path on a real GPU: predictions within the precision's derived bounds, the device decode
and resize against the CPU path, error rows identical in cpu/gpu/auto, streams safe (vision#9606),
two threads and torch.compile keeping the answers, and the Ray job using the GPU."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from inference import Predictor, load_model
from job.execution import DEFAULT_TOPK, default_precision, this_machine
from preprocess import preprocess_batch
from preprocess.device_decode import JpegDecoder, nvimgcodec_available
from preprocess.device_stage import DeviceStage
from tests.common.device_pixels import preprocess_on_device
from preprocess.split_decode import preprocess_routed
from preprocess.routing import DecodeRouter
from tests.common.datasets import mixed_rows
from tests.common.images import encoded, photo
from tests.gpu.conftest import logit_error_bound

CUDA = torch.device("cuda", 0)
DECODERS = ["nvjpeg", pytest.param("nvimgcodec", marks=pytest.mark.skipif(not nvimgcodec_available(), reason="nvImageCodec not installed"))]
# nvJPEG's IDCT and chroma upsampling against libjpeg-turbo's, plus the batched resize's box
# sampling against Pillow's triangle filter: 2.2 levels mean, measured on an H100 (2026-11).
DEVICE_PIXEL_MEAN_BOUND = 3.0

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_cuda_predictions_agree_with_cpu_fp32(clear_winner, pixels, precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    path, logits, abs_dot = clear_winner
    bound = logit_error_bound(precision, abs_dot)  # (16,) per image
    margin = np.diff(np.sort(logits, axis=1)[:, -2:], axis=1)[:, 0]
    assert (margin > 2 * bound).all(), "the checkpoint must make every top-1 decidable at this precision"
    cpu = Predictor(load_model(path), torch.device("cpu"), "fp32", DEFAULT_TOPK)(pixels)
    gpu = Predictor(load_model(path), CUDA, precision, DEFAULT_TOPK)(pixels)
    assert np.array_equal(cpu.label, gpu.label)
    assert (np.abs(cpu.score - gpu.score) <= 2 * cpu.score * bound).all()


def test_the_jobs_precision_on_this_gpu_is_half_and_runs():
    precision = default_precision(this_machine())
    assert precision in ("bf16", "fp16")
    Predictor(load_model("random"), CUDA, precision, DEFAULT_TOPK)  # the predictor takes it without refusing


@pytest.mark.parametrize("decoder", DECODERS)
def test_error_rows_are_identical_in_cpu_gpu_and_auto(decoder):
    cells = [data for _, data in mixed_rows()] + [None, encoded(photo(4000, 3000, seed=9))]
    stage = DeviceStage(CUDA, decoder=decoder)
    expected = preprocess_batch(cells).errors
    for mode in ("cpu", "gpu", "auto"):
        out = stage(preprocess_routed(cells, DecodeRouter(mode)))
        assert out.errors == expected, mode
        assert out.images.device.type == "cuda" and len(out.images) == sum(e is None for e in expected)


@pytest.mark.parametrize("decoder", DECODERS)
def test_device_pixels_match_the_cpu_path(jpegs, decoder):
    out = DeviceStage(CUDA, decoder=decoder)(preprocess_routed(jpegs, DecodeRouter("gpu")))
    assert out.decoder == decoder
    cpu = preprocess_batch(jpegs, cpu_resize="exact").pixels.astype(np.float64)  # the bound is against Pillow's pixels
    diff = np.abs(out.images.permute(0, 2, 3, 1).cpu().numpy() - cpu)
    assert diff.mean() < DEVICE_PIXEL_MEAN_BOUND


def test_legacy_wrapper_matches_the_cpu_path():
    cells = [data for _, data in mixed_rows()] + [encoded(photo(4000, 3000, seed=9))]
    gpu, cpu = preprocess_on_device(cells, CUDA), preprocess_batch(cells, cpu_resize="exact")
    assert gpu.pixels.device.type == "cuda" and gpu.errors == cpu.errors
    diff = (gpu.pixels.cpu().numpy().astype(int) - cpu.pixels.astype(int))[cpu.ok]
    assert np.abs(diff).mean() < DEVICE_PIXEL_MEAN_BOUND


@pytest.mark.parametrize("decoder", DECODERS)
def test_decode_is_exact_while_the_stream_has_pending_writes_and_another_stream_works(jpegs, decoder):
    """vision#9606: the decoder must not write into memory the stream's pending kernels still write.

    Each round frees a buffer whose fill is still queued behind a sleep on the decoding stream; the
    allocator hands that memory to the decode's outputs. Without the synchronise, the late fill
    lands on the decoded pixels. Meanwhile another stream keeps the SMs busy.
    """
    quiet = [t.cpu() for t in JpegDecoder(CUDA, decoder).decode(jpegs)]
    busy_stream, decode_stream = torch.cuda.Stream(CUDA), torch.cuda.Stream(CUDA)
    decoder_ = JpegDecoder(CUDA, decoder)
    a = torch.randn(4096, 4096, device=CUDA)
    for _ in range(10):
        with torch.cuda.stream(busy_stream):
            for _ in range(4):
                a = (a @ a).clamp_(-1, 1)
        with torch.cuda.stream(decode_stream):
            # Same sizes as the decoder's outputs, so the allocator hands these very blocks to them.
            doomed = [torch.empty_like(t, device=CUDA) for t in quiet]
            torch.cuda._sleep(50_000_000)  # ~tens of ms of pending work on this stream
            for buffer in doomed:
                buffer.fill_(255)
            del doomed, buffer  # free for the next allocations on this stream, fills still queued
            decoded = decoder_.decode(jpegs)
            on_host = [t.cpu() for t in decoded]
        assert all(torch.equal(x, y) for x, y in zip(quiet, on_host))
    torch.cuda.synchronize()


def test_two_threads_on_their_own_streams_give_the_sequential_answers(pixels):
    predictor = Predictor(load_model("random"), CUDA, "fp32", DEFAULT_TOPK)
    batches = [pixels[i : i + 4] for i in range(0, len(pixels), 4)]
    sequential = [predictor(b).topk_labels for b in batches]
    with ThreadPoolExecutor(2) as pool:
        concurrent = [p.topk_labels for p in pool.map(predictor, batches * 4)]
    assert all(np.array_equal(a, b) for a, b in zip(sequential * 4, concurrent))


def test_two_threads_decode_and_classify_like_one(jpegs, clear_winner):
    """The GPU actor's two threads: per-thread decoders and streams give the sequential answers."""
    predictor = Predictor(load_model(clear_winner[0]), CUDA, default_precision(this_machine()), DEFAULT_TOPK)
    stage = DeviceStage(CUDA)
    batches = [preprocess_routed(jpegs[i : i + 8], DecodeRouter("gpu")) for i in (0, 8)]

    def classify(batch):
        with predictor.stream():
            return predictor.predict_images(stage(batch).images).label

    sequential = [classify(b) for b in batches]
    with ThreadPoolExecutor(2) as pool:
        concurrent = list(pool.map(classify, batches * 8))
    assert all(np.array_equal(a, b) for a, b in zip(sequential * 8, concurrent))
    assert np.array_equal(np.concatenate(sequential), np.arange(16))  # the clear winner's labels


def test_compiled_predictor_agrees_with_eager_and_pads_short_batches(clear_winner, pixels):
    path, _, abs_dot = clear_winner
    eager = Predictor(load_model(path), CUDA, "fp32", DEFAULT_TOPK)(pixels[:5])
    compiled = Predictor(load_model(path), CUDA, "fp32", DEFAULT_TOPK, compile=True, batch_size=8)(pixels[:5])
    assert compiled.label.shape == (5,) and np.array_equal(eager.label, compiled.label)
    assert (np.abs(eager.score - compiled.score) <= 2 * eager.score * logit_error_bound("fp32", abs_dot[:5])).all()


def test_ray_job_runs_the_predictor_on_the_gpu(tmp_path):
    ray = pytest.importorskip("ray")
    from runners import ray_job

    ray.init(address="local", include_dashboard=False, logging_level="WARNING")
    try:
        manifest = ray_job.main(["--output", str(tmp_path / "out")])
    finally:
        ray.shutdown()
    assert manifest["settings"]["scaling"]["gpus"] >= 1 and manifest["hardware"]["gpus"]
    assert manifest["counts"]["predicted"] == 48


def test_ray_job_decodes_on_the_gpu(tmp_path):
    ray = pytest.importorskip("ray")
    from runners import ray_job

    ray.init(address="local", include_dashboard=False, logging_level="WARNING")
    try:
        manifest = ray_job.main(["--output", str(tmp_path / "out"), "--decode", "gpu"])
    finally:
        ray.shutdown()
    assert manifest["config"]["decode"] == "gpu" and manifest["counts"]["predicted"] == 48
