"""The GPU path: the predictor on CUDA agrees with CPU fp32, nvJPEG decode agrees with the CPU
decode, concurrent calls and torch.compile keep the answers, and the Ray job uses the GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from concurrent.futures import ThreadPoolExecutor

from inference import Predictor, default_precision, load_model
from inference.model import eval_size
from preprocess import preprocess_batch
from preprocess.gpu_decode import preprocess_on_device
from tests.common.datasets import mixed_rows
from tests.common.images import encoded, photo

CUDA = torch.device("cuda", 0)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pixels():
    return preprocess_batch([encoded(photo(500, 375, seed=s)) for s in range(16)], eval_size()).pixels


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_cuda_predictions_agree_with_cpu_fp32(pixels, precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    model = load_model("random")
    cpu = Predictor(model, torch.device("cpu"), "fp32")(pixels)
    gpu = Predictor(load_model("random"), torch.device("cuda", 0), precision)(pixels)
    assert (cpu.label == gpu.label).mean() >= 0.9
    np.testing.assert_allclose(cpu.score, gpu.score, atol=0.05 if precision != "fp32" else 1e-3)


def test_default_precision_on_cuda_is_half():
    assert default_precision(torch.device("cuda", 0)) in ("bf16", "fp16")


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


def test_nvjpeg_decode_matches_the_cpu_path():
    cells = [data for _, data in mixed_rows()] + [encoded(photo(4000, 3000, seed=9))]
    gpu, cpu = preprocess_on_device(cells, CUDA), preprocess_batch(cells)
    assert gpu.pixels.device.type == "cuda" and gpu.errors == cpu.errors
    diff = (gpu.pixels.cpu().numpy().astype(int) - cpu.pixels.astype(int))[cpu.ok]
    # nvJPEG's IDCT and upsampling differ from libjpeg-turbo's by a few levels.
    assert np.abs(diff).mean() < 2.0


def test_two_threads_on_their_own_streams_give_the_sequential_answers(pixels):
    predictor = Predictor(load_model("random"), CUDA, "fp32")
    batches = [pixels[i : i + 4] for i in range(0, len(pixels), 4)]
    sequential = [predictor(b).topk_labels for b in batches]
    with ThreadPoolExecutor(2) as pool:
        concurrent = [p.topk_labels for p in pool.map(predictor, batches * 4)]
    assert all(np.array_equal(a, b) for a, b in zip(sequential * 4, concurrent))


def test_compiled_predictor_agrees_with_eager_and_pads_short_batches(pixels):
    model = load_model("random")
    eager = Predictor(model, CUDA, "fp32")(pixels[:5])
    compiled = Predictor(load_model("random"), CUDA, "fp32", compile=True, batch_size=8)(pixels[:5])
    assert compiled.label.shape == (5,) and (eager.label == compiled.label).mean() >= 0.8
