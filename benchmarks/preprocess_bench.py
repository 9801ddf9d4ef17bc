"""CPU preprocessing per core: ours before and after the JPEG fast path, paired, with its pixel tolerance.

    python -m benchmarks.preprocess_bench [--images 64] [--repeats 5] [--sizes ...] [--weights random] [--results FILE.jsonl]

Same JPEG bytes, one thread, one run. Four methods take turns, repeat by repeat (``preprocess.benchmark.
paired_per_core``), each timed in CPU seconds of this thread, so each ratio is of a pair measured
under the same load: "ours before" is ``preprocess_batch`` (Pillow for every image: what the job runs),
"ours after" is ``preprocess_batch(fast_jpeg=True)`` (whole JPEGs: libjpeg-turbo direct + one OpenCV resample),
"torchvision resize+crop" is torchvision's eval transform stopped at the uint8 crop (ours' output),
"torchvision preset" is ``ResNet50_Weights.DEFAULT.transforms()`` whole (to float, normalised), what a
user writes by default. The speedups are medians of the per-repeat ratios.

Beside the rates: how far ours is from torchvision's eval transform (mean, 99th percentile and max
absolute difference, uint8 levels, over every image), and on ``--agreement-images`` photo-like images
how often ResNet50 (``--weights``: ``random`` is seeded, its BatchNorm statistics set from the images;
``imagenet`` where torchvision's weights are cached) gives the same top-1 class, and the same top-5 set,
from our pixels as from torchvision's, beside a control: torchvision's pixels moved +-1 level at random.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from benchmarks.common import add_results_option, append_result
from inference.model import RECIPE, load_model
from job.report import versions
from job.sample.synthetic import encode, synthetic_image
from preprocess.benchmark import (ours, ours_fast_jpeg, paired_per_core, paired_ratio, torchvision_resize_crop,
                                  torchvision_transform)
from preprocess.recipe import IMAGENET_RECIPE
from preprocess.transform import PIXEL_TOLERANCE

SIZES = {"imagenet_500x375": (500, 375), "photo_12mp_4000x3000": (4000, 3000)}
LARGEST_12MP_SET = 16  # torchvision decodes each 12 MP photo at full size: ~0.1 s apiece on one core
DECODERS = ("simplejpeg", "opencv-python-headless", "pillow")


def make_jpegs(size: tuple[int, int], count: int, seed: int = 0) -> list[bytes]:
    """Photo-like JPEGs (quality 90); at most 8 distinct images of 12 MP (encoding them is slow), reused."""
    rng = np.random.default_rng(seed)
    distinct = count if size[0] * size[1] <= 1_000_000 else min(count, 8)
    base = [synthetic_image(rng, *size) for _ in range(distinct)]
    return [encode(base[i % len(base)], "jpeg") for i in range(count)]


def pixel_difference(jpegs: list[bytes]) -> dict:
    """Ours (after and before) against torchvision's eval transform: mean, p99 and max abs difference."""
    reference = torchvision_resize_crop(IMAGENET_RECIPE)(jpegs).astype(np.int16)
    found = {}
    for name, method in (("after", ours_fast_jpeg(IMAGENET_RECIPE)), ("before", ours(IMAGENET_RECIPE))):
        diff = np.abs(method(jpegs).pixels.astype(np.int16) - reference)
        found[name] = {"mean": round(float(diff.mean()), 3), "p99": float(np.percentile(diff, 99)), "max": int(diff.max())}
    return found


def agreement(jpegs: list[bytes], weights: str) -> dict:
    """Top-1 and top-5 agreement of ResNet50 fed our pixels (after, and before as the floor) vs torchvision's."""
    model = load_model(weights).module
    theirs = torchvision_transform(RECIPE.transforms())(jpegs)
    if weights == "random":
        calibrate_batch_norm(model, theirs)
    with torch.inference_mode():
        top_theirs = model(theirs).topk(5).indices
        found = {"weights": weights, "images": len(jpegs), "distinct_top1_classes": len(set(top_theirs[:, 0].tolist()))}
        # The control: torchvision's own uint8 crops, each level moved by -1, 0 or +1 at random (mean 0.67 levels),
        # shows how much any difference of that size moves this model, whatever made it.
        exact = torchvision_resize_crop(IMAGENET_RECIPE)(jpegs).astype(np.int16)
        noise = np.random.default_rng(0).integers(-1, 2, exact.shape)
        candidates = {"after": ours_fast_jpeg(IMAGENET_RECIPE)(jpegs).pixels, "before": ours(IMAGENET_RECIPE)(jpegs).pixels,
                      "control_plus_minus_1": np.clip(exact + noise, 0, 255).astype(np.uint8)}
        for name, pixels in candidates.items():
            top_ours = model(_normalised(pixels)).topk(5).indices
            same_set = [set(a.tolist()) == set(b.tolist()) for a, b in zip(top_ours, top_theirs)]
            found[name] = {"top1": float((top_ours[:, 0] == top_theirs[:, 0]).float().mean()), "top5_set": float(np.mean(same_set))}
    return found


def _normalised(pixels: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 -> (N, 3, H, W) float, normalised with the recipe's mean and std (as the predictor does)."""
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (IMAGENET_RECIPE.mean, IMAGENET_RECIPE.std))
    return (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 255 - mean) / std


def calibrate_batch_norm(model: torch.nn.Module, images: torch.Tensor) -> None:
    """Set every BatchNorm's statistics from ``images``: a random ResNet50's logits then follow its input
    (with its initial statistics it answers one class for every photo, and agreement would say nothing)."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a plain average over the calibration batch
    model.train()
    with torch.no_grad():
        model(images)
    model.eval()


def bench_size(name: str, size: tuple[int, int], count: int, repeats: int) -> dict:
    jpegs = make_jpegs(size, count)
    rates = paired_per_core({
        "ours_before": ours(IMAGENET_RECIPE),
        "ours_after": ours_fast_jpeg(IMAGENET_RECIPE),
        "torchvision_resize_crop": torchvision_resize_crop(IMAGENET_RECIPE),
        "torchvision_preset": torchvision_transform(RECIPE.transforms()),
    }, jpegs, repeats)
    return {
        "benchmark": "preprocess_per_core",
        "images": name,
        "count": len(jpegs),
        "mean_jpeg_kb": round(sum(map(len, jpegs)) / len(jpegs) / 1024, 1),
        **{f"{method}_images_per_sec": round(float(np.median(r)), 1) for method, r in rates.items()},
        "speedup_after_vs_before": round(paired_ratio(rates["ours_after"], rates["ours_before"]), 2),
        "speedup_after_vs_before_range": [round(float(x), 2) for x in np.percentile(
            np.asarray(rates["ours_after"]) / np.asarray(rates["ours_before"]), [0, 100])],
        "speedup_after_vs_torchvision_preset": round(paired_ratio(rates["ours_after"], rates["torchvision_preset"]), 2),
        "pixel_difference_vs_torchvision": pixel_difference(jpegs[: min(len(jpegs), 32)]),
        "pixel_tolerance": PIXEL_TOLERANCE,
        "config": {"threads": 1, "repeats": repeats, "timer": "thread CPU time", "recipe": IMAGENET_RECIPE.to_dict()},
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--images", type=int, default=64, help="JPEGs per size (12 MP: at most %(const)s)".replace(
        "%(const)s", str(LARGEST_12MP_SET)))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=list(SIZES), help="image sets to time")
    parser.add_argument("--agreement-images", type=int, default=64, help="photo-like 500x375 JPEGs for top-1 agreement")
    parser.add_argument("--weights", default="random", help="ResNet50 weights for the agreement: random (seeded) or imagenet")
    args = parser.parse_args(argv)
    rows = []
    for name, size in ((name, SIZES[name]) for name in args.sizes):
        count = args.images if size[0] * size[1] <= 1_000_000 else min(args.images, LARGEST_12MP_SET)
        row = bench_size(name, size, count, args.repeats)
        if name == "imagenet_500x375" and args.agreement_images > 0:
            row["agreement_vs_torchvision"] = agreement(make_jpegs(size, args.agreement_images, seed=1), args.weights)
        row["versions"] = versions(*DECODERS)
        print_row(row)
        rows.append(append_result(args.results, row))
    return rows


def print_row(row: dict) -> None:
    diff = row["pixel_difference_vs_torchvision"]
    print(f"{row['images']} ({row['count']} JPEGs, {row['mean_jpeg_kb']} KB): per core, ours before "
          f"{row['ours_before_images_per_sec']:.0f} img/s, after {row['ours_after_images_per_sec']:.0f} img/s: "
          f"{row['speedup_after_vs_before']:.2f}x paired (range {row['speedup_after_vs_before_range']}); "
          f"torchvision resize+crop {row['torchvision_resize_crop_images_per_sec']:.0f}, "
          f"preset {row['torchvision_preset_images_per_sec']:.0f} img/s")
    print(f"  vs torchvision's eval transform, abs diff after: mean {diff['after']['mean']}, p99 {diff['after']['p99']:.0f}, "
          f"max {diff['after']['max']} (before: mean {diff['before']['mean']}, max {diff['before']['max']}); "
          f"tolerance mean < {row['pixel_tolerance']['mean']}, p99 <= {row['pixel_tolerance']['p99']}")
    if "agreement_vs_torchvision" in row:
        a = row["agreement_vs_torchvision"]
        print(f"  ResNet50 ({a['weights']} weights, {a['distinct_top1_classes']} distinct top-1 classes) on {a['images']} "
              f"photo-like JPEGs, agreement with torchvision: top-1 {a['after']['top1']:.1%} after, {a['before']['top1']:.1%} "
              f"before, {a['control_plus_minus_1']['top1']:.1%} for torchvision's pixels +-1 level at random; same top-5 set "
              f"{a['after']['top5_set']:.1%} after, {a['before']['top5_set']:.1%} before, {a['control_plus_minus_1']['top5_set']:.1%} control")


if __name__ == "__main__":
    main()
