"""The predictor on CPU: same answers as plain torchvision, deterministic random weights."""

from __future__ import annotations

import io

import PIL.Image
import numpy as np
import pytest
import torch
from torchvision.models import ResNet50_Weights

from inference import Predictor, load_model
from inference.model import eval_size
from preprocess import preprocess_batch
from tests.common.images import encoded, photo

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model():
    return load_model("random")


@pytest.fixture(scope="module")
def images():
    return [photo(500, 375, seed=s) for s in range(4)]


def test_matches_plain_torchvision_pipeline(model, images):
    """Our preprocessing + on-device normalisation gives torchvision's own eval results."""
    ours = Predictor(model, CPU, "fp32")(preprocess_batch([encoded(i, quality=95) for i in images], eval_size()).pixels)
    decoded = [PIL.Image.open(io.BytesIO(encoded(i, quality=95))).convert("RGB") for i in images]
    batch = torch.stack([ResNet50_Weights.DEFAULT.transforms()(d) for d in decoded])
    with torch.inference_mode():
        reference = model.module(batch).softmax(dim=1)
    ref_scores, ref_labels = reference.topk(5, dim=1)
    assert np.array_equal(ours.topk_labels, ref_labels.numpy())
    np.testing.assert_allclose(ours.topk_scores, ref_scores.numpy(), atol=2e-3)


def test_outputs_have_the_contract_shapes_and_ranges(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], eval_size()).pixels
    out = Predictor(model, CPU, topk=3)(pixels)
    assert out.label.shape == (4,) and out.topk_labels.shape == (4, 3)
    assert out.label.dtype == np.int64 and out.score.dtype == np.float32
    assert np.array_equal(out.label, out.topk_labels[:, 0])
    assert ((out.topk_labels >= 0) & (out.topk_labels < 1000)).all()
    assert (np.diff(out.topk_scores, axis=1) <= 0).all() and (out.topk_scores.sum(axis=1) <= 1.0001).all()


def test_random_weights_are_the_same_in_every_process(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], eval_size()).pixels
    again = load_model("random")
    a, b = Predictor(model, CPU)(pixels), Predictor(again, CPU)(pixels)
    assert np.array_equal(a.topk_labels, b.topk_labels) and np.array_equal(a.topk_scores, b.topk_scores)


def test_bf16_on_cpu_agrees_with_fp32(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], eval_size()).pixels
    fp32, bf16 = Predictor(model, CPU, "fp32")(pixels), Predictor(model, CPU, "bf16")(pixels)
    assert np.array_equal(fp32.label, bf16.label)
    np.testing.assert_allclose(fp32.score, bf16.score, atol=0.05)


def test_empty_batch_and_bad_shapes(model):
    predictor = Predictor(model, CPU)
    assert len(predictor(np.zeros((0, 224, 224, 3), np.uint8)).label) == 0
    with pytest.raises(ValueError, match=r"\(N, H, W, 3\) uint8"):
        predictor(np.zeros((2, 3, 224, 224), np.float32))


def test_fp16_on_cpu_is_refused_with_the_fix(model):
    with pytest.raises(ValueError, match="fp16 needs a GPU"):
        Predictor(model, CPU, "fp16")


def test_predict_on_device_is_the_call_path_without_the_copy(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], eval_size()).pixels
    predictor = Predictor(model, CPU, "fp32")
    direct, on_device = predictor(pixels), predictor.predict_on_device(torch.from_numpy(pixels))
    assert np.array_equal(direct.topk_labels, on_device.topk_labels)
    np.testing.assert_array_equal(direct.topk_scores, on_device.topk_scores)
