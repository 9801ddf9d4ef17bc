"""The GPU path: the predictor on CUDA agrees with CPU fp32, and the Ray job uses the GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inference import Predictor, default_precision, load_model
from inference.model import eval_size
from preprocess import preprocess_batch
from tests.common.images import encoded, photo

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
    assert manifest["scaling"]["gpus"] >= 1 and manifest["hardware"]["gpus"]
    assert manifest["counts"]["predicted"] == 48
