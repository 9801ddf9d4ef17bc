"""Each recipe's pixels against the model's own transform: the exact path and the fast path, per reference.

    python -m benchmarks.recipe_tolerance_bench [--images 8] [--results FILE.jsonl]

For every reference of ``benchmarks.references`` (torchvision's weights' transforms, timm's eval transform, Hugging
Face image processors with their default and their PIL backend): the same JPEGs decoded by PIL and given to the
reference, and given as bytes to ``preprocess_batch`` with the recipe the model's config maps to, ``cpu_resize``
exact and fast. The difference, in levels, of what the model would be fed: mean, 99th percentile and max of the
absolute difference over every pixel, per image set: textured and light photo-like 500x375-ish JPEGs (sizes chosen
so that centre crops start on half pixels, where round and floor differ), photos larger than twice the resize (both
our paths decode them at a DCT scale, as Pillow's ``draft`` does; the references decode them whole), and, where
matplotlib and scikit-learn are installed, crops of the real photos they ship. One JSON row per reference.
"""

from __future__ import annotations

import argparse
import io
import os

import numpy as np
from PIL import Image

from benchmarks.common import add_results_option, append_result
from benchmarks.references import Reference, pixels, references
from job.report import versions
from job.sample.synthetic import encode, synthetic_image, textured_image
from preprocess import preprocess_batch

# Sizes whose resized margins are odd halves for the 224/232/256 recipes (508x375: 303 wide at 224, 39.5 each side).
SIZES = [(508, 375), (500, 375), (375, 500), (640, 427)]
LARGE = [(1000, 750), (1600, 1200)]


def image_sets(count: int) -> dict[str, list[bytes]]:
    rng = np.random.default_rng(0)
    sets = {
        "textured": [encode(textured_image(rng, *SIZES[i % len(SIZES)]), "jpeg") for i in range(count)],
        "light": [encode(synthetic_image(rng, *SIZES[i % len(SIZES)]), "jpeg") for i in range(count)],
        "large_textured": [encode(textured_image(rng, *LARGE[i % len(LARGE)]), "jpeg") for i in range(max(2, count // 4))],
    }
    real = real_photos()
    if real:
        sets["real_photos"] = real
    return sets


def real_photos() -> list[bytes]:
    """500x375 windows of the photos matplotlib and scikit-learn ship (JPEG quality 90), where they are installed."""
    found = []
    for module, path in (("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"), ("sklearn", "datasets/images/china.jpg"),
                         ("sklearn", "datasets/images/flower.jpg")):
        try:
            root = os.path.dirname(__import__(module).__file__)
        except ImportError:
            continue
        photo = Image.open(os.path.join(root, path)).convert("RGB")
        for left, top in ((0, 0), (photo.width - 500, photo.height - 375)):
            buffer = io.BytesIO()
            photo.crop((left, top, left + 500, top + 375)).save(buffer, "JPEG", quality=90)
            found.append(buffer.getvalue())
    return found


def measure(reference: Reference, sets: dict[str, list[bytes]]) -> dict:
    transform = reference.build()
    found = {}
    for name, jpegs in sets.items():
        theirs = np.stack([pixels(reference, transform, Image.open(io.BytesIO(j)).convert("RGB")) for j in jpegs])
        found[name] = {}
        for path in ("exact", "fast"):
            ours = preprocess_batch(jpegs, reference.recipe, cpu_resize=path).pixels.astype(np.float64)
            diff = np.abs(ours - theirs)
            found[name][path] = {"mean": round(float(diff.mean()), 3), "p99": round(float(np.percentile(diff, 99)), 1),
                                 "max": round(float(diff.max()), 1)}
    return found


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--images", type=int, default=8, help="JPEGs in each of the textured and light sets")
    args = parser.parse_args(argv)
    sets = image_sets(args.images)
    rows = []
    for reference in references():
        row = {"benchmark": "recipe_tolerance", "reference": reference.name, "recipe": reference.recipe.to_dict(),
               "images": {name: len(jpegs) for name, jpegs in sets.items()}, "difference": measure(reference, sets),
               "versions": versions("timm", "transformers", "simplejpeg", "opencv-python-headless", "pillow")}
        print(f"{reference.name}: " + "; ".join(f"{name} exact {d['exact']['mean']}/{d['exact']['p99']:g}, fast "
                                               f"{d['fast']['mean']}/{d['fast']['p99']:g}"
                                               for name, d in row["difference"].items()) + " (mean/p99 levels)")
        rows.append(append_result(args.results, row))
    return rows


if __name__ == "__main__":
    main()
