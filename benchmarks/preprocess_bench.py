"""CPU preprocessing per core: ours vs torchvision's standard ResNet50 eval transform.

    python -m benchmarks.preprocess_bench [--images 64] [--repeats 3]

Same JPEG bytes, one thread, in one run. "torchvision" is what a user writes by default:
``Image.open(...).convert("RGB")`` then ``ResNet50_Weights.DEFAULT.transforms()`` (resize,
crop, to float tensor, normalise); "torchvision resize+crop" stops at the uint8 crop, the
same output as ours. "ours" is ``preprocess.preprocess_batch`` (DCT-scaled JPEG decode, one
resample of the kept rectangle, uint8 out; normalisation happens on the device). Warm-up is
not timed; the best of ``--repeats`` is reported for each. The timed methods live in
``preprocess.benchmark``, which ``runners.compare --stage preprocess`` also uses.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.common import add_results_option, append_result
from inference.model import RECIPE
from preprocess.recipe import IMAGENET_RECIPE
from job.sample.synthetic import encode, synthetic_image
from preprocess.benchmark import ours, per_core_rate, torchvision_resize_crop, torchvision_transform

SIZES = {"imagenet_500x375": (500, 375), "photo_12mp_4000x3000": (4000, 3000)}


def make_jpegs(size: tuple[int, int], count: int) -> list[bytes]:
    rng = np.random.default_rng(0)
    base = [synthetic_image(rng, *size) for _ in range(min(count, 8))]  # encoding 12 MP images is slow; reuse 8
    return [encode(base[i % len(base)], "jpeg") for i in range(count)]


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name, size in SIZES.items():
        jpegs = make_jpegs(size, args.images)
        reference = per_core_rate(torchvision_transform(RECIPE.transforms()), jpegs, args.repeats)
        resize_crop = per_core_rate(torchvision_resize_crop(IMAGENET_RECIPE), jpegs, args.repeats)
        mine = per_core_rate(ours(IMAGENET_RECIPE), jpegs, args.repeats)
        row = {
            "benchmark": "preprocess_per_core",
            "images": name,
            "count": len(jpegs),
            "mean_jpeg_kb": round(sum(map(len, jpegs)) / len(jpegs) / 1024, 1),
            "torchvision_images_per_sec": round(reference, 1),
            "torchvision_resize_crop_images_per_sec": round(resize_crop, 1),
            "ours_images_per_sec": round(mine, 1),
            "speedup": round(mine / reference, 2),
            "config": {"threads": 1, "repeats": args.repeats, "recipe": IMAGENET_RECIPE.to_dict()},
        }
        print(f"{name}: torchvision {reference:.1f} img/s, torchvision resize+crop {resize_crop:.1f} img/s, "
              f"ours {mine:.1f} img/s per core ({mine / reference:.2f}x)")
        append_result(args.results, row)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
