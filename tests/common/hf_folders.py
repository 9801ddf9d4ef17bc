"""Hugging Face classifiers of the processor types and folder layouts the job reads, made tiny here and saved by
``save_pretrained`` (random-initialised, offline), and each one's own answers: ``AutoImageProcessor`` + the model
``AutoModelForImageClassification`` loads, scored as its own pipeline scores (softmax, or each class's sigmoid for a
multi-label head). What the job's rows are held against: top-1 on at least 15 of 16 photos, scores within 0.01 (on
the fast CPU path, 0.05).

Kinds (``FOLDERS``): MobileViT (no normalisation, BGR), EfficientNet (``include_top``: the std twice), LeViT (the
256/224 resize), PoolFormer (``crop_pct`` then the crop), DeiT's distilled classifier (two heads averaged) and a
multi-label ViT. Layouts: one ``model.safetensors``, sharded safetensors with their index, ``pytorch_model.bin``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from job.sample.synthetic import synthetic_rows
from tests.common.model_sources import CLASSES, NAMES, pil_images

HEAD_STD = 0.5  # the logits' spread over the photos
DIRECTIONS = 3  # the features' main directions of difference between the photos the heads read
PHOTOS = 16  # 8 at 320x240 and 8 at 500x375
MIN_AGREEING = 15  # of PHOTOS whose top-1 is the reference's
SCORE_TOLERANCE = 0.01  # each row's score against the reference's probability of the row's label (--cpu-resize exact)
# --cpu-resize fast is within its stated tolerance of the model's own pixels (mean 1 level: docs/model.md); on these
# tiny networks that moves a score by up to 0.03.
FAST_SCORE_TOLERANCE = 0.05
SHARD_SIZE = "200KB"  # save_pretrained's max_shard_size: a tiny model in several shards
LAYOUTS = ("safetensors", "sharded", "bin")


def photos() -> list[bytes]:
    return [data for _, data in (*synthetic_rows(PHOTOS // 2, "jpeg", (320, 240), seed=5),
                                 *synthetic_rows(PHOTOS // 2, "jpeg", (500, 375), seed=6))]


def _folders() -> dict[str, Callable[[], tuple[object, object]]]:
    import transformers as t

    labels = dict(num_labels=CLASSES, id2label=dict(enumerate(NAMES)))
    small_vit = dict(image_size=224, patch_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, initializer_range=0.2)
    levit = dict(hidden_sizes=[16, 32, 48], num_attention_heads=[1, 2, 3], depths=[1, 1, 1], key_dim=[8, 8, 8])
    return {  # (model, processor), as each model's hub folder pairs them
        "mobilevit": lambda: (t.MobileViTForImageClassification(t.MobileViTConfig(
            image_size=256, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32], num_attention_heads=2,
            **labels)), t.MobileViTImageProcessor(size={"shortest_edge": 288}, crop_size={"height": 256, "width": 256},
                                                  resample=2)),  # apple/mobilevit-small's
        "efficientnet": lambda: (t.EfficientNetForImageClassification(t.EfficientNetConfig(
            image_size=224, width_coefficient=0.25, depth_coefficient=0.2, hidden_dim=320, **labels)),
            t.EfficientNetImageProcessor(size={"height": 224, "width": 224}, resample=3,
                                         image_std=[0.47853944, 0.4732864, 0.47434163])),  # google/efficientnet-b0's std
        "levit": lambda: (t.LevitForImageClassification(t.LevitConfig(**levit, **labels)), t.LevitImageProcessor()),
        "poolformer": lambda: (t.PoolFormerForImageClassification(t.PoolFormerConfig(
            hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1], **labels)), t.PoolFormerImageProcessor()),
        "deit-distilled": lambda: (t.DeiTForImageClassificationWithTeacher(t.DeiTConfig(**small_vit, **labels)),
                                   t.DeiTImageProcessor()),
        "vit-multilabel": lambda: (t.ViTForImageClassification(t.ViTConfig(
            **small_vit, problem_type="multi_label_classification", **labels)), t.ViTImageProcessor()),
    }


FOLDERS = ("mobilevit", "efficientnet", "levit", "poolformer", "deit-distilled", "vit-multilabel")


def hf_classifier(folder: Path, kind: str, layout: str = "safetensors") -> Path:
    """A tiny ``kind`` classifier of CLASSES classes with its processor, saved in ``layout`` under ``folder``."""
    torch.manual_seed(0)
    model, processor = _folders()[kind]()
    model.eval()
    _lively(model)
    _widen(model, processor)
    if layout == "bin":  # as transformers 4 saved it (5 writes safetensors only): its config and a torch.save state dict
        folder.mkdir(parents=True, exist_ok=True)
        model.config.architectures = [type(model).__name__]  # what save_pretrained records
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    else:
        model.save_pretrained(folder, **({"max_shard_size": SHARD_SIZE} if layout == "sharded" else {}))
    processor.save_pretrained(folder)
    return folder


def _heads(model: torch.nn.Module) -> list[torch.nn.Linear]:
    backbone = f"{model.base_model_prefix}."
    return [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)
            and m.out_features == CLASSES and not name.startswith(backbone)]


def _lively(model: torch.nn.Module) -> None:
    """He's initialisation of every convolution and torch's of every batch norm: transformers' leaves a tiny
    MobileViT's, EfficientNet's or LeViT's features at zero after a few blocks, so every photo would get one class."""
    for module in model.modules():
        if isinstance(module, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif isinstance(module, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            module.reset_parameters()


def _widen(model: torch.nn.Module, processor: object) -> None:
    """Random heads over the photos' features' main directions of difference (their mean taken out; the first
    DIRECTIONS principal components, each scaled to unit spread): what tells the photos apart decides the top-1, not
    the faint directions where resampling's differences are as large as the photos'."""
    seen: dict[int, torch.Tensor] = {}
    hooks = [head.register_forward_pre_hook(lambda m, inputs, i=i: seen.setdefault(i, inputs[0]))
             for i, head in enumerate(_heads(model))]
    with torch.inference_mode():
        model(pixel_values=processor(images=pil_images(photos()), return_tensors="pt")["pixel_values"])
    for hook in hooks:
        hook.remove()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for i, head in enumerate(_heads(model)):
            features = seen[i].double()  # (photos, D)
            _, spread, directions = torch.linalg.svd(features - features.mean(0), full_matrices=False)
            unit = directions[:DIRECTIONS] / (spread[:DIRECTIONS, None] / len(features) ** 0.5)  # (k, D)
            weight = torch.randn((head.out_features, DIRECTIONS), generator=generator, dtype=torch.float64) * HEAD_STD @ unit
            head.weight.copy_(weight)
            head.bias.copy_(-weight @ features.mean(0))


@dataclass(frozen=True)
class Answers:
    top1: np.ndarray  # (photos,) the reference's label
    scores: np.ndarray  # (photos, classes): its probabilities, as its own pipeline scores them


def hf_answers(folder: Path, jpegs: list[bytes], backend: str = "torchvision") -> Answers:
    """The folder's own processor and model on ``jpegs``: softmax, or each class's sigmoid for a multi-label head."""
    import transformers as t

    processor = t.AutoImageProcessor.from_pretrained(folder, local_files_only=True, backend=backend)
    model = t.AutoModelForImageClassification.from_pretrained(folder, local_files_only=True).eval()
    with torch.inference_mode():
        logits = model(pixel_values=processor(images=pil_images(jpegs), return_tensors="pt")["pixel_values"]).logits
    multi = model.config.problem_type == "multi_label_classification"
    scores = logits.sigmoid() if multi else logits.softmax(dim=1)
    return Answers(logits.argmax(1).numpy(), scores.numpy())


def assert_rows_are_the_models_own(rows: list[dict], ids: list[str], answers: Answers,
                                   tolerance: float = SCORE_TOLERANCE) -> None:
    """Top-1 on at least MIN_AGREEING of the photos; every row's score within ``tolerance`` of the reference's
    probability of the row's label; the reference itself tells the photos apart."""
    got = {row["id"]: row for row in rows}
    assert sorted(got) == sorted(ids) and all(got[i]["error"] is None for i in ids)
    assert len(set(answers.top1.tolist())) >= 2, "the reference gives every photo one class"
    agreeing = sum(got[i]["label"] == answers.top1[n] for n, i in enumerate(ids))
    assert agreeing >= MIN_AGREEING, [(got[i]["label"], int(answers.top1[n])) for n, i in enumerate(ids)]
    off = [abs(got[i]["score"] - answers.scores[n, got[i]["label"]]) for n, i in enumerate(ids)]
    assert max(off) <= tolerance, off


# --- one input and two folders, for the engines' tests ------------------------------------------------------------

ENGINE_FOLDERS = {"mobilevit": ("mobilevit", "safetensors"), "levit-sharded": ("levit", "sharded")}  # key: (kind, layout)


@dataclass(frozen=True)
class FolderCase:
    root: Path
    ids: list[str]
    answers: dict[str, Answers]  # by ENGINE_FOLDERS key: the folder's own pipeline's

    def command(self, key: str, output: Path, *extra: str) -> list[str]:
        """The job's options for folder ``key`` on the case's input, on the exact CPU path (the model's own pixels)."""
        return ["--input", str(self.root / "in"), "--output", str(output), "--model", f"hf:{self.root / key}",
                "--batch-size", "8", "--cpu-resize", "exact", *extra]


def write_folder_case(root: Path) -> FolderCase:
    """The photos in two files and ENGINE_FOLDERS' folders under ``root``, each with its own pipeline's answers: a
    processor whose steps go beyond resize, crop and normalise (MobileViT's: pixels 0..1, B, G, R), and weights in
    shards."""
    from job.sample.synthetic import write_dataset
    from storage import resolve

    jpegs = photos()
    ids = [f"photo-{i}" for i in range(len(jpegs))]
    write_dataset(resolve(str(root / "in")), iter(zip(ids, jpegs)), rows_per_file=PHOTOS // 2)
    answers = {key: hf_answers(hf_classifier(root / key, kind, layout), jpegs) for key, (kind, layout) in ENGINE_FOLDERS.items()}
    return FolderCase(root, ids, answers)
