"""Top-1 agreement of the fast and the exact CPU path on a classifier trained here, on photo-like classes.

    python -m benchmarks.agreement_bench [--train 1024] [--eval 1024] [--epochs 6] [--results FILE.jsonl]

A pixel tolerance says how far two paths' pixels are; what a user asks is whether the model's answer changes.
No trained weights can be downloaded here, and a random network's answers move with any difference at all, so
this trains one: a small CNN on ``CLASSES`` photo-like classes (textured JPEGs of varied sizes whose class is the
direction and period of a striped texture, the fine ones 3-4 pixels once resized, where resamplers differ most;
colours and a shape on top random), fed the exact path's pixels. Then, on held-out JPEGs, the
same network's top-1 from the exact path's pixels and from the fast path's, and, as a control, from the exact
pixels moved by -1, 0 or +1 level at random (about the fast path's mean difference).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
from PIL import Image, ImageDraw

from benchmarks.common import add_results_option, append_result
from job.report import versions
from job.sample.synthetic import GRAIN_LEVELS, encode, one_over_f
from preprocess import preprocess_batch
from preprocess.recipe import Recipe

ANGLES = (0.0, 45.0, 90.0, 135.0)  # the stripes' direction, degrees, give or take ANGLE_SPREAD
PERIODS = ((5.0, 7.0), (10.0, 14.0))  # fine and coarse stripes, in source pixels (fine: 3-4 pixels once resized)
CLASSES = len(ANGLES) * len(PERIODS)  # 8: every direction at both periods
ANGLE_SPREAD = 12.0
SHAPES = ("ellipse", "rectangle", "triangle")  # drawn over every class: a distractor, colours and place random
SIZES = [(500, 375), (375, 500), (640, 480), (500, 333), (400, 400)]
RECIPE = Recipe()  # ResNet50's: the default recipe, bilinear 232 -> 224


def labelled_jpeg(rng: np.random.Generator, label: int) -> bytes:
    """One JPEG (quality 90) of class ``label``: stripes of its direction and period over a 1/f texture and a colour
    field, a random shape on top, sensor grain."""
    width, height = SIZES[int(rng.integers(len(SIZES)))]
    angle = math.radians(ANGLES[label // len(PERIODS)] + rng.uniform(-ANGLE_SPREAD, ANGLE_SPREAD))
    period = rng.uniform(*PERIODS[label % len(PERIODS)])
    y, x = np.mgrid[0:height, 0:width]
    stripes = np.sin((x * math.cos(angle) + y * math.sin(angle)) * 2 * math.pi / period + rng.uniform(0, 2 * math.pi))
    base = Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), "RGB").resize((width, height), Image.Resampling.BICUBIC)
    texture = 0.6 * stripes[..., None] + 0.5 * one_over_f(rng, width, height)
    image = Image.fromarray(np.clip(np.asarray(base, np.float32) + 30 * texture, 0, 255).astype(np.uint8), "RGB")
    _draw(ImageDraw.Draw(image), rng, SHAPES[int(rng.integers(len(SHAPES)))], width, height)
    noisy = np.asarray(image, np.float32) + rng.normal(0, GRAIN_LEVELS, (height, width, 3))
    return encode(Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8), "RGB"), "jpeg")


def _draw(draw: ImageDraw.ImageDraw, rng: np.random.Generator, shape: str, width: int, height: int) -> None:
    size = rng.uniform(0.1, 0.25) * min(width, height)
    cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.2, 0.8) * height
    box = (cx - size, cy - size, cx + size, cy + size)
    fill = tuple(int(v) for v in rng.integers(0, 256, 3))
    if shape == "ellipse":
        draw.ellipse(box, fill=fill)
    elif shape == "rectangle":
        draw.rectangle(box, fill=fill)
    else:
        draw.polygon([(cx, cy - size), (cx - size, cy + size), (cx + size, cy + size)], fill=fill)


def make_set(count: int, seed: int) -> tuple[list[bytes], np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % CLASSES
    return [labelled_jpeg(rng, int(label)) for label in labels], labels


def small_cnn() -> torch.nn.Module:
    """Five stride-2 conv blocks (224 -> 7), global average, a linear head: about 0.1 M parameters."""
    torch.manual_seed(0)
    layers, channels = [], 3
    for width in (16, 24, 32, 48, 64):
        layers += [torch.nn.Conv2d(channels, width, 3, stride=2, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU()]
        channels = width
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(channels, CLASSES))


def normalised(pixels: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 -> (N, 3, H, W) float, the recipe's mean and std (as the predictor normalises)."""
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (RECIPE.mean, RECIPE.std))
    return (torch.from_numpy(np.ascontiguousarray(pixels)).permute(0, 3, 1, 2).float() / 255 - mean) / std


def train(pixels: np.ndarray, labels: np.ndarray, epochs: int, batch: int = 32) -> torch.nn.Module:
    model, inputs, targets = small_cnn(), normalised(pixels), torch.from_numpy(labels).long()
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    shuffle = np.random.default_rng(0)
    model.train()
    for _ in range(epochs):
        order = torch.from_numpy(shuffle.permutation(len(inputs)))
        for start in range(0, len(inputs), batch):
            rows = order[start:start + batch]
            optimiser.zero_grad()
            torch.nn.functional.cross_entropy(model(inputs[rows]), targets[rows]).backward()
            optimiser.step()
    return model.eval()


def top1(model: torch.nn.Module, pixels: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return torch.cat([model(normalised(pixels[i:i + 64])).argmax(1) for i in range(0, len(pixels), 64)]).numpy()


def agreement(model: torch.nn.Module, jpegs: list[bytes], labels: np.ndarray) -> dict:
    exact = preprocess_batch(jpegs, RECIPE, cpu_resize="exact").pixels
    fast = preprocess_batch(jpegs, RECIPE).pixels
    noise = np.random.default_rng(1).integers(-1, 2, exact.shape)
    control = np.clip(exact.astype(np.int16) + noise, 0, 255).astype(np.uint8)
    answers = {"exact": top1(model, exact), "fast": top1(model, fast), "control_plus_minus_1": top1(model, control)}
    return {
        "images": len(jpegs),
        "accuracy": {name: round(float((found == labels).mean()), 4) for name, found in answers.items()},
        "top1_agreement_with_exact": {name: round(float((found == answers["exact"]).mean()), 4)
                                      for name, found in answers.items() if name != "exact"},
        "disagreements_fast": int((answers["fast"] != answers["exact"]).sum()),
        "pixel_difference_fast_vs_exact_mean": round(float(np.abs(fast.astype(int) - exact.astype(int)).mean()), 3),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--train", type=int, default=1024, help="training JPEGs (the exact path's pixels)")
    parser.add_argument("--eval", type=int, default=1024, help="held-out JPEGs both paths preprocess")
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args(argv)
    train_jpegs, train_labels = make_set(args.train, seed=0)
    model = train(preprocess_batch(train_jpegs, RECIPE, cpu_resize="exact").pixels, train_labels, args.epochs)
    eval_jpegs, eval_labels = make_set(args.eval, seed=1)
    found = agreement(model, eval_jpegs, eval_labels)
    row = {"benchmark": "fast_exact_agreement", **found, "classes": CLASSES,
           "config": {"train": args.train, "epochs": args.epochs, "recipe": RECIPE.to_dict(), "model": "small_cnn"},
           "versions": versions("simplejpeg", "opencv-python-headless", "pillow")}
    print(f"small CNN on {CLASSES} photo-like classes, {found['images']} held-out JPEGs: accuracy exact "
          f"{found['accuracy']['exact']:.1%}, fast {found['accuracy']['fast']:.1%}; top-1 agreement with exact: fast "
          f"{found['top1_agreement_with_exact']['fast']:.2%} ({found['disagreements_fast']} images), control +-1 level "
          f"{found['top1_agreement_with_exact']['control_plus_minus_1']:.2%}; pixels fast vs exact mean "
          f"{found['pixel_difference_fast_vs_exact_mean']} levels")
    return append_result(args.results, row)


if __name__ == "__main__":
    main()
