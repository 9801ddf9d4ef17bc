"""CPU preprocessing per core: the fast path (the default) against the exact one, paired, each recipe's tolerance beside it.

    python -m benchmarks.preprocess_bench [--images 64] [--repeats 9] [--sets ...] [--recipes ...] [--results FILE.jsonl]

Same JPEG bytes, one thread, one run. For each image set and timed recipe, four methods take turns, repeat by
repeat (``preprocess.benchmark.paired_per_core``), each timed in CPU seconds of its thread, so each ratio is of a
pair measured under the same load: "exact" is ``preprocess_batch(cpu_resize="exact")`` (Pillow for every image:
the job's default until this path, fd2d3cf's, unchanged), "fast" is ``preprocess_batch`` (the default:
libjpeg-turbo direct + one OpenCV prefilter and resize), and torchvision's Resize + CenterCrop and ResNet50 preset
for scale. The speedups are medians of the per-repeat ratios, their range beside them.

Beside the rates, for every recipe of ``TOLERANCE_RECIPES`` on the same images: how far the fast path is from the
exact path's pixels (Pillow's: the reference transforms' own, docs/model.md), mean, 99th percentile and max absolute
difference in uint8 levels, against ``preprocess.resample.PIXEL_TOLERANCE``.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.common import add_results_option, append_result
from inference.model import RECIPE
from job.report import versions
from job.sample.synthetic import encode, synthetic_image, textured_image
from preprocess.benchmark import (ours, ours_exact, paired_per_core, paired_ratio, torchvision_resize_crop,
                                  torchvision_transform)
from preprocess.recipe import Recipe
from preprocess.resample import PIXEL_TOLERANCE

# Photo-like JPEGs (quality 90): textured ones weigh what photos of their size do (about 98 KB at 500x375), light
# ones are smooth colour fields with fine noise (about 71 KB): the decode's share of the time differs.
SETS = {
    "textured_500x375": (textured_image, (500, 375)),
    "light_500x375": (synthetic_image, (500, 375)),
    "light_12mp_4000x3000": (synthetic_image, (4000, 3000)),
}
LARGEST_12MP_SET = 16  # the exact path decodes each 12 MP photo at 1/8 scale, torchvision at full size: ~0.1 s apiece
# The recipes the models this project loads ask for (docs/model.md): timed, and their pixels measured.
TOLERANCE_RECIPES = {
    "resnet50_bilinear_232_224": Recipe(),
    "timm_bicubic_256_224": Recipe(resize=256, crop=224, interpolation="bicubic"),
    "timm_vit_bicubic_248_224": Recipe(resize=248, crop=224, interpolation="bicubic"),
    "hf_vit_squash_bilinear_224": Recipe(resize=224, crop=224, crop_mode="squash"),
    "hf_siglip_squash_bicubic_384": Recipe(resize=384, crop=384, crop_mode="squash", interpolation="bicubic"),
    "hf_clip_bicubic_224_floor": Recipe(resize=224, crop=224, interpolation="bicubic", crop_offset="floor"),
    "hf_dinov2_bicubic_256_224": Recipe(resize=256, crop=224, interpolation="bicubic"),
}
TIMED_RECIPES = ("resnet50_bilinear_232_224", "timm_bicubic_256_224")
DECODERS = ("simplejpeg", "opencv-python-headless", "pillow")


def make_jpegs(name: str, count: int, seed: int = 0) -> list[bytes]:
    """``count`` JPEGs of set ``name`` (quality 90); at most 8 distinct 12 MP images (encoding them is slow), reused."""
    make, size = SETS[name]
    rng = np.random.default_rng(seed)
    distinct = count if size[0] * size[1] <= 1_000_000 else min(count, 8)
    base = [make(rng, *size) for _ in range(distinct)]
    return [encode(base[i % len(base)], "jpeg") for i in range(count)]


def pixel_difference(jpegs: list[bytes], recipe: Recipe) -> dict:
    """The fast path against the exact path's pixels: mean, p99 and max abs difference, in levels."""
    diff = np.abs(ours(recipe)(jpegs).pixels.astype(np.int16) - ours_exact(recipe)(jpegs).pixels.astype(np.int16))
    return {"mean": round(float(diff.mean()), 3), "p99": float(np.percentile(diff, 99)), "max": int(diff.max())}


def bench(name: str, recipe_name: str, jpegs: list[bytes], repeats: int) -> dict:
    recipe = TOLERANCE_RECIPES[recipe_name]
    timed = {"exact": ours_exact(recipe), "fast": ours(recipe), "torchvision_resize_crop": torchvision_resize_crop(recipe)}
    if recipe == Recipe():
        timed["torchvision_preset"] = torchvision_transform(RECIPE.transforms())
    rates = paired_per_core(timed, jpegs, repeats)
    ratios = np.asarray(rates["fast"]) / np.asarray(rates["exact"])
    return {
        "benchmark": "preprocess_per_core",
        "images": name,
        "recipe_name": recipe_name,
        "count": len(jpegs),
        "mean_jpeg_kb": round(sum(map(len, jpegs)) / len(jpegs) / 1024, 1),
        **{f"{method}_images_per_sec": round(float(np.median(r)), 1) for method, r in rates.items()},
        "speedup_fast_vs_exact": round(paired_ratio(rates["fast"], rates["exact"]), 2),
        "speedup_fast_vs_exact_range": [round(float(x), 2) for x in np.percentile(ratios, [0, 100])],
        "pixel_tolerance": PIXEL_TOLERANCE,
        "config": {"threads": 1, "repeats": repeats, "timer": "thread CPU time", "recipe": recipe.to_dict()},
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--images", type=int, default=64, help=f"JPEGs per set (12 MP: at most {LARGEST_12MP_SET})")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS), help="image sets to time")
    parser.add_argument("--recipes", nargs="+", choices=sorted(TOLERANCE_RECIPES), default=list(TIMED_RECIPES),
                        help="recipes to time (every recipe's pixels are measured on each set)")
    parser.add_argument("--tolerance-images", type=int, default=32, help="JPEGs per set whose pixels are compared")
    args = parser.parse_args(argv)
    rows = []
    for name in args.sets:
        count = args.images if "12mp" not in name else min(args.images, LARGEST_12MP_SET)
        jpegs = make_jpegs(name, count)
        sample = jpegs[: args.tolerance_images]
        tolerances = {recipe: pixel_difference(sample, TOLERANCE_RECIPES[recipe]) for recipe in TOLERANCE_RECIPES}
        for recipe_name in args.recipes:
            row = bench(name, recipe_name, jpegs, args.repeats)
            row["pixel_difference_fast_vs_exact"] = tolerances
            row["versions"] = versions(*DECODERS)
            print_row(row)
            rows.append(append_result(args.results, row))
    return rows


def print_row(row: dict) -> None:
    print(f"{row['images']} ({row['count']} JPEGs, {row['mean_jpeg_kb']} KB), {row['recipe_name']}: per core, exact "
          f"{row['exact_images_per_sec']:.0f} img/s, fast {row['fast_images_per_sec']:.0f} img/s: "
          f"{row['speedup_fast_vs_exact']:.2f}x paired (range {row['speedup_fast_vs_exact_range']}); "
          f"torchvision resize+crop {row['torchvision_resize_crop_images_per_sec']:.0f} img/s")
    for recipe, diff in row["pixel_difference_fast_vs_exact"].items():
        print(f"  {recipe}: fast vs exact abs diff mean {diff['mean']}, p99 {diff['p99']:.0f}, max {diff['max']} "
              f"(tolerance mean <= {row['pixel_tolerance']['mean']}, p99 <= {row['pixel_tolerance']['p99']})")


if __name__ == "__main__":
    main()
