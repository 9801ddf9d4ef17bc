"""Two models over the same images: one run of both (``--models``) against two single-model runs, paired, as JSON rows.

    python -m benchmarks.multi_model_bench --set decode-bound --images 96 --results benchmarks/results/multi_model.jsonl
    python -m benchmarks.multi_model_bench --set photos --images 256 --engine local

Each pair runs on one input, written once: the two single-model runs one after the other (each reads and decodes every
image), then the run of both (each image read and decoded once for the two: ``job.several``), each into fresh outputs,
``--weights random``, the same execution options. Two sets:

- ``decode-bound``: 12 MP JPEGs (4000x3000) and two small models at 64 px (resnet18 and efficientnet_b0): the
  decode costs far more than the models, as on a GPU box whose CPUs are its limit (efficientnet_b0: a bicubic recipe);
- ``photos``: 500x375 JPEGs (the ImageNet-sized photos BENCHMARKS.md's figures use), ResNet50 beside a CLIP-sized
  ViT-B/16 tower (torchvision's vit_b_16 with random weights stands in: 86M parameters, 224 px, bicubic recipe).

A row records the wall time of each way (the commands' own seconds from the manifests, start-up included), the images
decoded by the run of both (its manifest's timeline) against the two runs' (every image, twice), the CPU seconds of
decode per image where the run measured them, and the ratio: both in one run over the two runs' time together.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.common import add_results_option, append_result
from job import driver
from runners import ENGINES, engine, make_dataset

SETS = {
    "decode-bound": {"size": "4000x3000", "models": [("resnet18", ["--resize", "72", "--crop", "64"]),
                                                    ("efficientnet_b0", ["--resize", "72", "--crop", "64"])]},
    "photos": {"size": "500x375", "models": [("resnet50", []),
                                             ("vit_b_16", ["--interpolation", "bicubic", "--embeddings", "only"])]},
}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_option(parser)
    parser.add_argument("--set", choices=sorted(SETS), default="decode-bound")
    parser.add_argument("--engine", default="local", choices=sorted(ENGINES), help="the engine whose job runs")
    parser.add_argument("--images", type=int, default=96)
    parser.add_argument("--rows-per-file", default="16")
    parser.add_argument("--note", default="", help="free text recorded with the row (e.g. 'machine shared')")
    args, job_args = parser.parse_known_args(argv)
    chosen, work = SETS[args.set], Path(tempfile.mkdtemp(prefix="multi-model-bench-"))
    make_dataset.main(["--output", str(work / "in"), "--images", str(args.images), "--format", "jpeg",
                       "--rows-per-file", args.rows_per_file, "--size", chosen["size"]])
    run = driver.main
    job = engine(args.engine)
    alone = []
    for number, (model, options) in enumerate(chosen["models"]):
        began = time.perf_counter()
        manifest = run(job, ["--input", str(work / "in"), "--output", str(work / f"alone-{number}"), "--model", model,
                             "--weights", "random", *options, *job_args])
        alone.append({"model": model, "wall_seconds": round(time.perf_counter() - began, 2),
                      "images": manifest["counts"]["rows_out"]})
    entries = work / "models.toml"
    entries.write_text(_toml(chosen["models"], work))
    began = time.perf_counter()
    both = run(job, ["--input", str(work / "in"), "--models", str(entries), *job_args])
    together = round(time.perf_counter() - began, 2)
    timeline = both["models"][0]["timeline"]
    separate = round(sum(a["wall_seconds"] for a in alone), 2)
    row = {"benchmark": "multi_model", "set": args.set, "engine": args.engine, "size": chosen["size"],
           "images": alone[0]["images"], "models": [m for m, _ in chosen["models"]],
           "separate_seconds": separate, "alone": alone, "together_seconds": together,
           "together_over_separate": round(together / separate, 3),
           "images_decoded_together": timeline["images_decoded"], "images_decoded_separate": 2 * alone[0]["images"],
           "decode_cpu_seconds_per_image": round(timeline["decode_seconds"] / max(timeline["images_decoded"], 1), 4),
           "job_args": job_args, "note": args.note, "config": both["models"][0]["config"]}
    append_result(args.results, row)
    print(f"{args.set} on {args.engine}: {row['images']} images, two runs {separate:.1f} s, one run of both "
          f"{together:.1f} s ({row['together_over_separate']:.2f} of them); decoded {row['images_decoded_together']} "
          f"times against {row['images_decoded_separate']}")
    return row


def _toml(models: list[tuple[str, list[str]]], work: Path) -> str:
    """The --models file of the set's models, each with its recipe options, into ``work/both-<n>``."""
    lines = []
    for number, (model, options) in enumerate(models):
        lines += ["[[models]]", f'model = "{model}"', 'weights = "random"', f'output = "{work / f"both-{number}"}"']
        pairs = dict(zip(options[::2], options[1::2]))
        for option, value in pairs.items():
            key = option.removeprefix("--").replace("-", "_")
            lines.append(f"{key} = {value}" if value.isdigit() else f'{key} = "{value}"')
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
