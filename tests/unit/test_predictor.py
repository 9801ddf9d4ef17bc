"""The predictor on CPU: same answers as plain torchvision, deterministic random weights."""

from __future__ import annotations

import dataclasses
import io

import PIL.Image
import numpy as np
import pytest
import torch
from torchvision.models import ResNet50_Weights

from inference import Predictor, load_model
from inference.model import LoadedModel
from job.execution import DEFAULT_TOPK
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
    """Our exact preprocessing + on-device normalisation gives torchvision's own eval results."""
    pixels = preprocess_batch([encoded(i, quality=95) for i in images], IMAGENET_RECIPE, cpu_resize="exact").pixels
    ours = Predictor(model, CPU, "fp32", DEFAULT_TOPK)(pixels)
    decoded = [PIL.Image.open(io.BytesIO(encoded(i, quality=95))).convert("RGB") for i in images]
    batch = torch.stack([ResNet50_Weights.DEFAULT.transforms()(d) for d in decoded])
    with torch.inference_mode():
        reference = model.module(batch).softmax(dim=1)
    ref_scores, ref_labels = reference.topk(DEFAULT_TOPK, dim=1)
    assert np.array_equal(ours.topk_labels, ref_labels.numpy())
    np.testing.assert_allclose(ours.topk_scores, ref_scores.numpy(), atol=2e-3)


def test_outputs_have_the_contract_shapes_and_ranges(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    out = Predictor(model, CPU, "fp32", 3)(pixels)
    assert out.label.shape == (4,) and out.topk_labels.shape == (4, 3)
    assert out.label.dtype == np.int64 and out.score.dtype == np.float32
    assert np.array_equal(out.label, out.topk_labels[:, 0])
    assert ((out.topk_labels >= 0) & (out.topk_labels < 1000)).all()
    assert (np.diff(out.topk_scores, axis=1) <= 0).all() and (out.topk_scores.sum(axis=1) <= 1.0001).all()


def test_random_weights_are_the_same_in_every_process(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    again = load_model("random")
    a, b = Predictor(model, CPU, "fp32", DEFAULT_TOPK)(pixels), Predictor(again, CPU, "fp32", DEFAULT_TOPK)(pixels)
    assert np.array_equal(a.topk_labels, b.topk_labels) and np.array_equal(a.topk_scores, b.topk_scores)


def test_bf16_on_cpu_agrees_with_fp32(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    fp32, bf16 = Predictor(model, CPU, "fp32", DEFAULT_TOPK)(pixels), Predictor(model, CPU, "bf16", DEFAULT_TOPK)(pixels)
    assert np.array_equal(fp32.label, bf16.label)
    np.testing.assert_allclose(fp32.score, bf16.score, atol=0.05)


def test_empty_batch_and_bad_shapes(model):
    predictor = Predictor(model, CPU, "fp32", DEFAULT_TOPK)
    assert len(predictor(np.zeros((0, 224, 224, 3), np.uint8)).label) == 0
    with pytest.raises(ValueError, match=r"\(N, H, W, 3\) uint8"):
        predictor(np.zeros((2, 3, 224, 224), np.float32))


def test_fp16_on_cpu_is_refused_with_the_fix(model):
    with pytest.raises(ValueError, match="fp16 needs a GPU"):
        Predictor(model, CPU, "fp16", DEFAULT_TOPK)


def test_tensor_input_gives_the_numpy_answers(model, images):
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    predictor = Predictor(model, CPU, "fp32", DEFAULT_TOPK)
    from_numpy, from_tensor = predictor(pixels), predictor(torch.from_numpy(pixels.copy()))
    assert np.array_equal(from_numpy.topk_labels, from_tensor.topk_labels)
    np.testing.assert_array_equal(from_numpy.topk_scores, from_tensor.topk_scores)
    with pytest.raises(ValueError, match="uint8"):
        predictor(torch.zeros((1, 224, 224, 3), dtype=torch.float32))


def test_concurrent_calls_from_two_threads_give_the_sequential_answers(model, images):
    """The Ray GPU actors call the predictor from two threads at once (each on its own stream)."""
    from concurrent.futures import ThreadPoolExecutor

    batches = [preprocess_batch([encoded(i)], IMAGENET_RECIPE).pixels for i in images]
    predictor = Predictor(model, CPU, "fp32", DEFAULT_TOPK)
    sequential = [predictor(b).topk_labels for b in batches]
    with ThreadPoolExecutor(2) as pool:
        concurrent = [p.topk_labels for p in pool.map(predictor, batches)]
    assert all(np.array_equal(a, b) for a, b in zip(sequential, concurrent))


def test_compile_needs_a_batch_size_to_pad_to(model):
    with pytest.raises(ValueError, match="needs batch_size"):
        Predictor(model, CPU, "fp32", DEFAULT_TOPK, compile=True)


def test_float_images_on_the_device_give_the_uint8_answers(model, images):
    """``predict_images`` (the device stage's float NCHW) agrees with the uint8 NHWC path."""
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    predictor = Predictor(model, CPU, "fp32", DEFAULT_TOPK)
    from_uint8 = predictor(pixels)
    from_float = predictor.predict_images(torch.from_numpy(pixels).permute(0, 3, 1, 2).float())  # (N, 3, H, W)
    assert np.array_equal(from_uint8.topk_labels, from_float.topk_labels)
    np.testing.assert_allclose(from_uint8.topk_scores, from_float.topk_scores, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\) float32"):
        predictor.predict_images(torch.from_numpy(pixels))


@pytest.fixture(scope="module")
def ten_classes(tmp_path_factory):
    """A 10-class DDP checkpoint and the plain torchvision module with the same weights."""
    from tests.common.checkpoints import fine_tuned_checkpoint

    path = tmp_path_factory.mktemp("ckpt") / "ten.pt"
    reference = fine_tuned_checkpoint(path, 10, "ddp", class_names=[str(i) for i in range(10)])
    return load_model(str(path)), reference


def _pooled(module: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """torchvision's ResNet50 pooled feature: the avgpool output, flattened (N, 2048)."""
    seen = []
    handle = module.avgpool.register_forward_hook(lambda _m, _i, out: seen.append(torch.flatten(out, 1)))
    with torch.inference_mode():
        logits = module(batch)
    handle.remove()
    return seen[0], logits


def test_embeddings_are_torchvisions_pooled_feature_beside_its_predictions(ten_classes, images):
    model, reference = ten_classes
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    out = Predictor(model, CPU, "fp32", DEFAULT_TOPK, embeddings="float32")(pixels)
    mean, std = torch.tensor(IMAGENET_RECIPE.mean).view(1, 3, 1, 1), torch.tensor(IMAGENET_RECIPE.std).view(1, 3, 1, 1)
    pooled, logits = _pooled(reference, (torch.from_numpy(pixels).permute(0, 3, 1, 2) / 255 - mean) / std)
    assert out.embeddings.shape == (4, 2048) and out.embeddings.dtype == np.float32
    cosine = torch.nn.functional.cosine_similarity(torch.from_numpy(out.embeddings), pooled)
    assert cosine.min() >= 0.999, cosine
    assert np.array_equal(out.topk_labels, logits.topk(5, dim=1).indices.numpy())
    assert len(set(out.label)) > 1 and out.topk_labels.max() < 10  # the fitted head tells these images apart


def test_embeddings_default_to_float16_and_can_come_alone(ten_classes, images):
    model, _ = ten_classes
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    both = Predictor(model, CPU, "fp32", DEFAULT_TOPK, embeddings="float16")(pixels)
    alone = Predictor(model, CPU, "fp32", DEFAULT_TOPK, predictions=False, embeddings="float16")(pixels)
    assert alone.label is None and alone.topk_scores is None and alone.embeddings.dtype == np.float16
    np.testing.assert_array_equal(alone.embeddings, both.embeddings)
    from_images = Predictor(model, CPU, "fp32", DEFAULT_TOPK, predictions=False, embeddings="float16").predict_images(
        torch.from_numpy(pixels).permute(0, 3, 1, 2).float())
    np.testing.assert_allclose(from_images.embeddings.astype(np.float32), alone.embeddings.astype(np.float32), rtol=1e-3, atol=1e-3)
    empty = Predictor(model, CPU, "fp32", DEFAULT_TOPK, predictions=False, embeddings="float16")(np.zeros((0, 224, 224, 3), np.uint8))
    assert empty.embeddings.shape == (0, 2048) and empty.label is None


def test_predictions_alone_return_no_embeddings_and_keep_the_module_whole(ten_classes, images):
    model, _ = ten_classes
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    assert Predictor(model, CPU, "fp32", DEFAULT_TOPK)(pixels).embeddings is None
    assert isinstance(model.module.fc, torch.nn.Linear) and "fc.weight" in model.module.state_dict()


@pytest.mark.parametrize("options, refusal", [
    ({"embeddings": "float64"}, "embeddings='float64': choose one of float16, float32"),
    ({"predictions": False}, "nothing to return"),
    ({"topk": 11}, "top-k 11 does not fit a model with 10 classes: choose 1 to 10"),
])
def test_bad_output_options_are_refused(ten_classes, options, refusal):
    with pytest.raises(ValueError, match=refusal):
        Predictor(ten_classes[0], CPU, **{"precision": "fp32", "topk": DEFAULT_TOPK, **options})


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    """A one-logit (sigmoid/BCE) DDP checkpoint and the plain torchvision module with the same weights."""
    from tests.common.checkpoints import fine_tuned_checkpoint

    path = tmp_path_factory.mktemp("ckpt") / "binary.pt"
    reference = fine_tuned_checkpoint(path, 1, "ddp", class_names=["negative", "positive"])
    return load_model(str(path)), reference


def test_a_one_logit_head_gives_label_1_at_sigmoid_half_and_up_with_its_probability(binary):
    model, reference = binary
    pixels = preprocess_batch([encoded(photo(320, 240, seed=s)) for s in range(12)], IMAGENET_RECIPE).pixels
    out = Predictor(model, CPU, "fp32", 2)(pixels)
    mean, std = torch.tensor(IMAGENET_RECIPE.mean).view(1, 3, 1, 1), torch.tensor(IMAGENET_RECIPE.std).view(1, 3, 1, 1)
    with torch.inference_mode():
        p = reference((torch.from_numpy(pixels).permute(0, 3, 1, 2) / 255 - mean) / std)[:, 0].sigmoid().numpy()  # (N,)
    positive = p >= 0.5
    assert set(positive) == {True, False}, p  # the fitted head tells these images apart: both branches are tested
    assert np.array_equal(out.label, positive.astype(np.int64))
    # atol: channels_last convolutions and the fused normalisation move logits by ~1e-4 from torchvision's NCHW run.
    np.testing.assert_allclose(out.score, np.where(positive, p, 1 - p), atol=1e-4)
    assert np.array_equal(out.topk_labels, np.stack([positive, ~positive], axis=1).astype(np.int64))
    np.testing.assert_allclose(out.topk_scores, np.stack([np.where(positive, p, 1 - p), np.where(positive, 1 - p, p)], axis=1),
                               atol=1e-4)
    with pytest.raises(ValueError, match="top-k 3 does not fit a model with 2 classes: choose 1 to 2"):
        Predictor(model, CPU, "fp32", 3)


def test_a_one_logit_head_at_exactly_one_half_is_label_1(tmp_path):
    from tests.common.checkpoints import write_checkpoint

    state = {**load_model("random").module.state_dict(), "fc.weight": torch.zeros(1, 2048), "fc.bias": torch.zeros(1)}
    model = load_model(str(write_checkpoint(tmp_path / "half.pt", state)))
    out = Predictor(model, CPU, "fp32", 2)(np.zeros((2, 224, 224, 3), np.uint8))
    assert out.topk_labels.tolist() == [[1, 0], [1, 0]] and out.topk_scores.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_a_bgr_recipe_feeds_the_model_its_channels_flipped_both_ways_in(model, images):
    """A model that takes B, G, R (a MobileViT processor's): normalised in R, G, B order, then flipped on the device,
    from host pixels and from device images alike."""
    bgr = dataclasses.replace(model.spec, recipe=dataclasses.replace(IMAGENET_RECIPE, channel_order="bgr"))
    flipped = LoadedModel(model.module, bgr, model.head)
    pixels = preprocess_batch([encoded(i) for i in images], IMAGENET_RECIPE).pixels
    from_host = Predictor(flipped, CPU, "fp32", DEFAULT_TOPK)(pixels)
    images_on_device = torch.from_numpy(pixels).permute(0, 3, 1, 2).float()
    from_device = Predictor(flipped, CPU, "fp32", DEFAULT_TOPK).predict_images(images_on_device)
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (IMAGENET_RECIPE.mean, IMAGENET_RECIPE.std))
    with torch.inference_mode():
        reference = model.module(((images_on_device / 255 - mean) / std).flip(1)).softmax(dim=1).topk(DEFAULT_TOPK, dim=1)
    for ours in (from_host, from_device):
        assert np.array_equal(ours.topk_labels, reference.indices.numpy())
        np.testing.assert_allclose(ours.topk_scores, reference.values.numpy(), atol=1e-5)
    assert not np.array_equal(from_host.topk_scores, Predictor(model, CPU, "fp32", DEFAULT_TOPK)(pixels).topk_scores)
