"""The predictor on CPU: same answers as plain torchvision, deterministic random weights."""

from __future__ import annotations

import io

import PIL.Image
import numpy as np
import pytest
import torch
from torchvision.models import ResNet50_Weights

from inference import Predictor, load_model
from preprocess.recipe import IMAGENET_RECIPE
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
    ours = Predictor(model, CPU, "fp32")(preprocess_batch([encoded(i, quality=95) for i in images], IMAGENET_RECIPE).pixels)
    decoded = [PIL.Image.open(io.BytesIO(encoded(i, quality=95))).convert("RGB") for i in images]
    batch = torch.stack([ResNet50_Weights.DEFAULT.transforms()(d) for d in decoded])
    with torch.inference_mode():
        reference = model.module(batch).softmax(dim=1)
    ref_scores, ref_labels = reference.topk(5, dim=1)
    assert np.array_equal(ours.topk_labels, ref_labels.numpy())
    np.testing.assert_allclose(ours.topk_scores, ref_scores.numpy(), atol=2e-3)


def test_outputs_have_the_contract_shapes_and_ranges(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    out = Predictor(model, CPU, topk=3)(pixels)
    assert out.label.shape == (4,) and out.topk_labels.shape == (4, 3)
    assert out.label.dtype == np.int64 and out.score.dtype == np.float32
    assert np.array_equal(out.label, out.topk_labels[:, 0])
    assert ((out.topk_labels >= 0) & (out.topk_labels < 1000)).all()
    assert (np.diff(out.topk_scores, axis=1) <= 0).all() and (out.topk_scores.sum(axis=1) <= 1.0001).all()


def test_random_weights_are_the_same_in_every_process(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    again = load_model("random")
    a, b = Predictor(model, CPU)(pixels), Predictor(again, CPU)(pixels)
    assert np.array_equal(a.topk_labels, b.topk_labels) and np.array_equal(a.topk_scores, b.topk_scores)


def test_bf16_on_cpu_agrees_with_fp32(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
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


def test_tensor_input_gives_the_numpy_answers(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    predictor = Predictor(model, CPU)
    from_numpy, from_tensor = predictor(pixels), predictor(torch.from_numpy(pixels.copy()))
    assert np.array_equal(from_numpy.topk_labels, from_tensor.topk_labels)
    np.testing.assert_array_equal(from_numpy.topk_scores, from_tensor.topk_scores)
    with pytest.raises(ValueError, match="uint8"):
        predictor(torch.zeros((1, 224, 224, 3), dtype=torch.float32))


def test_concurrent_calls_from_two_threads_give_the_sequential_answers(model, images):
    """The Ray GPU actors call the predictor from two threads at once (each on its own stream)."""
    from concurrent.futures import ThreadPoolExecutor

    batches = [preprocess_batch([encoded(i)], IMAGENET_RECIPE).pixels for i in images]
    predictor = Predictor(model, CPU)
    sequential = [predictor(b).topk_labels for b in batches]
    with ThreadPoolExecutor(2) as pool:
        concurrent = [p.topk_labels for p in pool.map(predictor, batches)]
    assert all(np.array_equal(a, b) for a, b in zip(sequential, concurrent))


def test_compile_needs_a_batch_size_to_pad_to(model):
    with pytest.raises(ValueError, match="needs batch_size"):
        Predictor(model, CPU, compile=True)


def test_float_images_on_the_device_give_the_uint8_answers(model, images):
    """``predict_images`` (the device stage's float NCHW) agrees with the uint8 NHWC path."""
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    predictor = Predictor(model, CPU)
    from_uint8 = predictor(pixels)
    from_float = predictor.predict_images(torch.from_numpy(pixels).permute(0, 3, 1, 2).float())  # (N, 3, H, W)
    assert np.array_equal(from_uint8.topk_labels, from_float.topk_labels)
    np.testing.assert_allclose(from_uint8.topk_scores, from_float.topk_scores, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\) float32"):
        predictor.predict_images(torch.from_numpy(pixels))
