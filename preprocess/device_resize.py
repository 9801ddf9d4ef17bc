"""Resize + centre-crop a whole batch of decoded images in one kernel, on their device.

Use ``resize_center_crop_batch`` on the decoder's output; it follows the recipe (kernel, centre or squash,
the crop's rounding) as the CPU paths do.

Bilinear recipes: images of different sizes are copied into a zero-padded float canvas (N, 3, Hmax, Wmax) and
``torchvision.ops.roi_align`` samples each image's box (the crop region of the CPU recipe,
``preprocess.transform.source_box``) into (N, 3, crop, crop): one kernel, where one ``F.interpolate`` per image
ran at a third of the speed (44,400 against 14,100 img/s for 256 500x375 images on an H100).

Bicubic recipes, and bilinear squashes: roi_align has no cubic sampling, and its one sampling ratio per canvas
cannot blur a squash's two scales as Pillow does (textured 500x375 to 224x224: 1.25 levels mean from Pillow's
pixels). Each group of images of one size is resized whole by ``F.interpolate(antialias=True)`` (bicubic: Keys'
a = -0.5 widened by the downscale, Pillow's kernel; bilinear: Pillow's triangle) and cropped: 0.3 levels mean;
one call per distinct size in the batch (a night's photos come in a few). Not yet run on a GPU.

Sampling: ``roi_align`` averages ``sampling_ratio`` x ``sampling_ratio`` bilinear samples per
output pixel, a box filter over the pixel's footprint: that is what stands in for Pillow's
antialiased (triangle-filter) downscale. ``sampling_ratio`` is chosen per canvas from its
downscale factor (``sampling_ratio_for``).

Canvas memory: a 12 MP photo among 500x375 ones would pad every image to 12 MP, so
``plan_canvases`` groups images by size (similar pixel counts, padding at most ``CANVAS_WASTE`` x
their pixels); a batch of one size is one canvas with no padding at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torchvision.ops import roi_align

from preprocess.recipe import Recipe
from preprocess.transform import crop_offsets, resized_size, source_box

# Bilinear samples per source pixel, along each side, when shrinking by more than sqrt(2). Mean
# absolute difference to the CPU path (Pillow), same libjpeg-turbo decode, 500x375 JPEGs (x1.62
# down), by samples per output pixel side: 1: 1.72, 2: 0.59, 3: 0.48, 4: 0.44, 6: 0.42 levels;
# 4000x3000 (x12.9, the CPU path DCT-scales): 13: 0.546, 26: 0.542. It flattens out past ~2.
SAMPLES_PER_SOURCE_PIXEL = 2
MAX_SAMPLING_RATIO = 16  # a 12 MP photo needs no more: 13 and 26 samples differ by 0.004 levels
# A canvas holds at most this many padded pixels per image's real pixel...
CANVAS_WASTE = 2.0
# ...holds images within this factor of each other's pixel count (a canvas has one sampling ratio)...
CANVAS_AREA_SPREAD = 2.0
# ...and at most this many pixels in all (x 3 channels x 4 bytes: 768 MB of float32).
CANVAS_MAX_PIXELS = 64 * 2**20

Size = tuple[int, int]  # (height, width), as tensors give it


def resize_center_crop_batch(images: Sequence[torch.Tensor], recipe: Recipe) -> torch.Tensor:
    """(3, H_i, W_i) uint8 images -> (N, 3, crop, crop) float32 in [0, 255], on their device."""
    if not images:
        raise ValueError("resize_center_crop_batch needs at least one image")
    if recipe.interpolation == "bicubic" or recipe.crop_mode == "squash":
        return _interpolated_batch(images, recipe)
    sizes = [(int(i.shape[1]), int(i.shape[2])) for i in images]
    groups = plan_canvases(sizes)
    outputs = [_crop_group([images[i] for i in g], [sizes[i] for i in g], recipe) for g in groups]
    if len(groups) == 1:
        return outputs[0]
    order = torch.tensor([i for g in groups for i in g], device=outputs[0].device)
    result = torch.empty((len(images), *outputs[0].shape[1:]), dtype=outputs[0].dtype, device=outputs[0].device)
    return result.index_copy_(0, order, torch.cat(outputs))  # back to the input order


def _interpolated_batch(images: Sequence[torch.Tensor], recipe: Recipe) -> torch.Tensor:
    """Pillow's antialiased kernel: per size, one whole-image ``F.interpolate``, then the recipe's crop."""
    by_size: dict[Size, list[int]] = {}
    for i, image in enumerate(images):
        by_size.setdefault((int(image.shape[1]), int(image.shape[2])), []).append(i)
    out = images[0].new_empty((len(images), 3, recipe.crop, recipe.crop), dtype=torch.float32)
    for (height, width), rows in by_size.items():
        resized_w, resized_h = resized_size(width, height, recipe)
        left, top = crop_offsets(resized_w, resized_h, recipe)
        group = torch.stack([images[i] for i in rows]).float()  # (n, 3, H, W)
        resized = F.interpolate(group, size=(resized_h, resized_w), mode=recipe.interpolation, antialias=True,
                                align_corners=False)
        crop = resized[:, :, top:top + recipe.crop, left:left + recipe.crop].clamp_(0, 255)  # Pillow clips the overshoot
        out[torch.tensor(rows, device=out.device)] = crop
    return out


def plan_canvases(sizes: Sequence[Size]) -> list[list[int]]:
    """Group image indices so that each group's padded canvas wastes little memory."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i][0] * sizes[i][1], sizes[i]))
    groups: list[list[int]] = []
    group: list[int] = []
    height = width = real = smallest = 0
    for i in order:
        h, w = sizes[i]
        grown_h, grown_w, grown_real = max(height, h), max(width, w), real + h * w
        padded = (len(group) + 1) * grown_h * grown_w
        spread = h * w > CANVAS_AREA_SPREAD * smallest
        if group and (spread or padded > CANVAS_WASTE * grown_real or padded > CANVAS_MAX_PIXELS):
            groups.append(group)
            group, grown_h, grown_w, grown_real = [], h, w, h * w
        if not group:
            smallest = h * w  # sizes come in ascending pixel count
        group.append(i)
        height, width, real = grown_h, grown_w, grown_real
    return [sorted(g) for g in (groups + [group] if group else groups)]  # input order within a canvas


def crop_boxes(sizes: Sequence[Size], recipe: Recipe) -> list[tuple[float, float, float, float]]:
    """Each image's crop region (left, top, right, bottom) in its source pixels."""
    return [source_box((w, h), recipe) for h, w in sizes]


def _crop_group(images: list[torch.Tensor], sizes: list[Size], recipe: Recipe) -> torch.Tensor:
    regions = crop_boxes(sizes, recipe)
    canvas = _canvas(images, sizes, regions)  # (n, 3, Hmax, Wmax) float32
    boxes = torch.tensor([(i, *box) for i, box in enumerate(regions)], dtype=torch.float32)
    boxes = boxes.to(canvas.device, non_blocking=True)  # (n, 5): batch index, x1, y1, x2, y2
    sampling = sampling_ratio_for(regions, recipe)
    return roi_align(canvas, boxes, (recipe.crop, recipe.crop), spatial_scale=1.0, sampling_ratio=sampling, aligned=True)


def sampling_ratio_for(regions: Sequence[tuple[float, float, float, float]], recipe: Recipe) -> int:
    """Samples per output pixel side for a canvas, matching the blur of Pillow's antialiased bilinear.

    Shrinking by s, Pillow applies a triangle filter of radius s (variance s^2/6, in source pixels);
    roi_align applies bilinear (variance 1/6) after averaging r samples spread over the pixel's
    footprint s (variance s^2 (r^2 - 1) / (12 r^2)). Equal variances give r^2 = s^2 / (2 - s^2) for
    s < sqrt(2); beyond, no r blurs enough, so take many samples (about 2 per source pixel).
    """
    scale = max(max(right - left, bottom - top) for left, top, right, bottom in regions) / recipe.crop
    dense = min(MAX_SAMPLING_RATIO, math.ceil(SAMPLES_PER_SOURCE_PIXEL * scale))
    if scale <= 1:
        return 1  # enlarging: plain bilinear, as Pillow does
    if scale * scale < 2:
        # ceil(r - 0.2): the integer measured best around r (1.07 -> 1, 1.30 -> 2, 2.25 -> 3).
        return max(1, min(dense, math.ceil(math.sqrt(scale * scale / (2 - scale * scale)) - 0.2)))
    return dense


def _canvas(images: list[torch.Tensor], sizes: list[Size], regions: list[tuple[float, float, float, float]]) -> torch.Tensor:
    if len(set(sizes)) == 1:
        return torch.stack(images).float()  # no padding: one copy, one conversion
    height, width = max(h for h, _ in sizes), max(w for _, w in sizes)
    canvas = images[0].new_zeros((len(images), 3, height, width), dtype=torch.float32)
    for i, (image, (h, w), (_, _, right, bottom)) in enumerate(zip(images, sizes, regions)):
        canvas[i, :, :h, :w].copy_(image)  # uint8 -> float in the copy
        if right > w - 1 or bottom > h - 1:  # samples reach the last pixel: rare, tiny images
            _replicate_edges(canvas[i], h, w)
    return canvas


def _replicate_edges(canvas: torch.Tensor, h: int, w: int) -> None:
    """Copy the last row and column into the padding beside them.

    Bilinear samples within a pixel of the right or bottom edge would otherwise blend the image
    with the padding's zeros; with the edge repeated they clamp, as Pillow's filters do at edges.
    """
    if h < canvas.shape[1]:
        canvas[:, h, :w].copy_(canvas[:, h - 1, :w])
    if w < canvas.shape[2]:
        canvas[:, : h + 1, w].copy_(canvas[:, : h + 1, w - 1])
