"""One run of all four engines, through ``runners.compare``, shared by the tests that read it.

A fine-tuned 10-class ResNet50 checkpoint (DDP-prefixed keys, class names saved beside them),
eleven photos and a truncated JPEG in three files, embeddings beside the predictions: compare's
report and parity (tests/integration/test_compare.py) and "your model" on every engine
(tests/integration/test_your_model.py) read the same outputs, so the engines run once a session.
Every engine must give what ``torchvision``'s own ``resnet50(num_classes=10)`` with the same weights
gives on the project's recipe's pixels: the reference is computed here, once.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from job.sample.synthetic import synthetic_rows, write_dataset
from preprocess import preprocess_batch
from preprocess.recipe import IMAGENET_RECIPE
from storage import resolve
from tests.common.checkpoints import fine_tuned_checkpoint
from tests.common.images import bad_images

ENGINES = ("ray", "spark", "sagemaker", "local")
NAMES = ("Abyssinian", "beagle", "Maine Coon", "shiba inu", "crème brûlée", "pug", "sphynx", "boxer", "tabby", "corgi")
BAD = {"bad-truncated": "truncated"}
PRICE = 1.006  # $/hour given to every engine
BATCH = 8


@dataclass(frozen=True)
class Case:
    root: Path
    checkpoint: Path
    ids: list[str]
    top1: dict[str, int]  # torchvision's top-1 per good id
    pooled: dict[str, np.ndarray]  # torchvision's pooled feature (2048,) per good id

    def argv(self, output: Path | str, *extra: str) -> list[str]:
        return ["--input", str(self.root / "in"), "--output", str(output), "--weights", str(self.checkpoint),
                "--batch-size", "4", *extra]


@dataclass(frozen=True)
class EveryEngine:
    case: Case
    comparison: object  # runners.compare.Comparison
    report: Path  # compare's --report: results.json, results.md, chart.png, outputs/<engine>/
    printed: str  # what compare printed

    def output(self, engine: str) -> Path:
        return self.report / "outputs" / engine


def write_case(root: Path) -> Case:
    """The checkpoint and the input under ``root``, and torchvision's answers for them."""
    reference = fine_tuned_checkpoint(root / "ddp.pt", 10, "ddp", class_names=NAMES)  # plain torchvision, same weights
    rows = [*synthetic_rows(11, "jpeg", (320, 240), seed=3), ("bad-truncated", bad_images()["truncated-jpeg"])]
    write_dataset(resolve(str(root / "in")), iter(rows), rows_per_file=5)
    good = [(i, data) for i, data in rows if i not in BAD]
    top1, pooled = _torchvision(reference, [data for _, data in good])
    return Case(root, root / "ddp.pt", [i for i, _ in rows], dict(zip([i for i, _ in good], top1)),
                dict(zip([i for i, _ in good], pooled)))


def run_every_engine(root: Path) -> EveryEngine:
    """compare over the case: every engine in its own process, batch 8, embeddings, the preprocess stage timed too."""
    from runners import compare

    root.mkdir(parents=True, exist_ok=True)
    case = write_case(root)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        comparison = compare.main(["--engines", ",".join(ENGINES), "--input", str(root / "in"), "--weights", str(case.checkpoint),
                                   "--batch-size", str(BATCH), "--embeddings", "--report", str(root / "report"), "--stage", "all",
                                   "--model-only-seconds", "1", "--price-per-hour", ",".join(f"{e}={PRICE}" for e in ENGINES),
                                   "--engine-args", "ray=--num-cpu-actors 1", "--engine-args", "local=--workers 1"])
    return EveryEngine(case, comparison, root / "report", printed.getvalue())


def _torchvision(module: torch.nn.Module, images: list[bytes]) -> tuple[list[int], list[np.ndarray]]:
    """Top-1 and pooled feature of torchvision's module on the project's recipe's pixels (ImageNet's, as the checkpoint has none)."""
    pixels = preprocess_batch(images, IMAGENET_RECIPE).pixels  # (N, 224, 224, 3) uint8
    mean = torch.tensor(IMAGENET_RECIPE.mean).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_RECIPE.std).view(1, 3, 1, 1)
    batch = (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 255 - mean) / std
    seen = []
    hook = module.avgpool.register_forward_hook(lambda _m, _i, out: seen.append(torch.flatten(out, 1)))
    with torch.inference_mode():
        logits = module(batch)
    hook.remove()
    assert len(set(logits.argmax(1).tolist())) > 1, "the fitted head should tell these images apart"
    return logits.argmax(1).tolist(), list(seen[0].numpy())
