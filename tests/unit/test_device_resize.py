"""The batched roi_align resize + crop on the CPU device: the CPU path's pixels within a measured tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from preprocess import Recipe, preprocess_batch
from preprocess.device_decode import JpegDecoder
from preprocess.device_resize import CANVAS_WASTE, plan_canvases, resize_center_crop_batch, sampling_ratio_for, crop_boxes
from tests.common.images import encoded, photo

SIZE = Recipe()
# Mean |difference| to Pillow's antialiased bilinear, same libjpeg-turbo decode, measured on these
# synthetic photos: 0.30-0.55 levels (box-averaged samples against a triangle filter). 640x480 is
# 1.4: the CPU path decodes it at half size by DCT scaling first. Bounds leave ~40% headroom.
MEAN_BOUND = {(500, 375): 0.65, (320, 240): 0.5, (300, 200): 0.45, (4000, 3000): 0.8, (640, 480): 2.0, (8, 3000): 0.45}


@pytest.fixture(scope="module")
def decoder():
    return JpegDecoder(torch.device("cpu"))


@pytest.mark.parametrize("width,height", sorted(MEAN_BOUND))
def test_matches_the_cpu_path_within_the_measured_tolerance(decoder, width, height):
    cells = [encoded(photo(width, height, seed=s)) for s in range(2)]
    cpu = preprocess_batch(cells, SIZE, cpu_resize="exact").pixels.astype(np.float64)  # (N, crop, crop, 3): Pillow's
    device = resize_center_crop_batch(decoder.decode(cells), SIZE)  # (N, 3, crop, crop) float
    assert device.shape == (2, 3, SIZE.crop, SIZE.crop) and device.dtype == torch.float32
    diff = np.abs(device.permute(0, 2, 3, 1).numpy() - cpu)
    assert diff.mean() < MEAN_BOUND[(width, height)] and np.percentile(diff, 99) < 8


def test_mixed_sizes_give_each_image_its_own_answer_in_input_order(decoder):
    cells = [encoded(photo(w, h, seed=i)) for i, (w, h) in enumerate([(500, 375), (480, 360), (4000, 3000), (300, 200), (1, 1)])]
    images = decoder.decode(cells)
    together = resize_center_crop_batch(images, SIZE)
    for i, image in enumerate(images):
        alone = resize_center_crop_batch([image], SIZE)[0]
        assert torch.allclose(together[i], alone, atol=1e-3), i  # padding never leaks into an image


def test_a_large_photo_gets_its_own_canvas():
    groups = plan_canvases([(375, 500)] * 6 + [(3000, 4000)] + [(375, 500)] * 3)
    assert sorted(map(len, groups)) == [1, 9] and [6] in groups
    assert plan_canvases([(375, 500), (360, 480)]) == [[0, 1]]  # near sizes share one canvas


def test_canvases_waste_at_most_the_set_factor():
    sizes = [(h, w) for h in (100, 375, 480, 1000) for w in (100, 500, 640)]
    for group in plan_canvases(sizes):
        height, width = max(sizes[i][0] for i in group), max(sizes[i][1] for i in group)
        real = sum(sizes[i][0] * sizes[i][1] for i in group)
        assert len(group) == 1 or len(group) * height * width <= CANVAS_WASTE * real
    assert sorted(i for g in plan_canvases(sizes) for i in g) == list(range(len(sizes)))


def test_sampling_ratio_follows_the_downscale():
    ratio = [sampling_ratio_for(crop_boxes([(h, w)], SIZE), SIZE) for h, w in [(200, 300), (240, 320), (375, 500), (3000, 4000)]]
    assert ratio == [1, 1, 4, 16]


# The device path against the exact CPU path (Pillow), textured photo-like JPEGs, per recipe: measured on these
# images mean 0.29 levels (F.interpolate's antialiased kernels are Pillow's), bounds with about 40% headroom.
# Bilinear centre crops take roi_align (above): 0.91 mean on textured photos, 0.52 on light ones.
RECIPE_BOUNDS = {
    "timm-bicubic": (Recipe(resize=256, crop=224, interpolation="bicubic"), 0.4),
    "siglip-squash-bicubic": (Recipe(resize=224, crop=224, crop_mode="squash", interpolation="bicubic"), 0.4),
    "clip-bicubic-floor": (Recipe(resize=224, crop=224, interpolation="bicubic", crop_offset="floor"), 0.4),
    "vit-squash-bilinear": (Recipe(resize=224, crop=224, crop_mode="squash"), 0.5),
}


@pytest.mark.parametrize("name", sorted(RECIPE_BOUNDS))
def test_every_recipe_matches_the_exact_cpu_path_on_the_device(decoder, name):
    from job.sample.synthetic import encode, textured_image

    recipe, bound = RECIPE_BOUNDS[name]
    rng = np.random.default_rng(5)
    cells = [encode(textured_image(rng, w, h), "jpeg") for w, h in [(503, 375), (503, 375), (375, 500), (460, 400)]]
    cpu = preprocess_batch(cells, recipe, cpu_resize="exact").pixels.astype(np.float64)
    device = resize_center_crop_batch(decoder.decode(cells), recipe).permute(0, 2, 3, 1).numpy()
    assert device.shape == cpu.shape
    diff = np.abs(device - cpu)
    assert diff.mean() < bound and np.percentile(diff, 99) < 8, diff.mean()
