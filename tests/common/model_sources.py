"""Models from timm, Hugging Face and MLflow, made and saved here (random-initialised, offline), and each one's own
reference pipeline: what the job's rows are held against.

Every model is tiny (timm's ``test_*`` architectures at 160 px; Hugging Face configs of hidden size 32 and two
layers), with a head of ``CLASSES`` classes drawn wide enough that photos get different top-1s (a head that
gives every image one class would let any pipeline agree). The references, each the model's own:
- timm: ``timm.data.create_transform(**resolve_data_config({}, model=m))`` on PIL images (torchvision's PIL
  resize), then ``m`` / ``m.forward_head(m.forward_features(x), pre_logits=True)``;
- Hugging Face: ``AutoImageProcessor.from_pretrained(folder)``, whose default in transformers 5 is the
  torchvision backend (``backend="pil"`` gives the PIL one: ``REFERENCE_BACKENDS``), then the model class
  the folder's ``architectures`` names (CLIP/SigLIP: the whole model's ``get_image_features``, normalised);
- MLflow: ``mlflow.pytorch.load_model`` and torchvision's ``Resize/CenterCrop/Normalize`` of the logged recipe.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from job.sample.synthetic import synthetic_rows

CLASSES = 10
NAMES = [f"class {i}" for i in range(CLASSES)]
HEAD_STD = 0.5  # the head's weights' spread: photos then differ in their top-1 by more than resampling does
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
REFERENCE_BACKENDS = ("torchvision", "pil")  # transformers 5's image processor backends; the first is its default


def pil_images(jpegs: list[bytes]) -> list[Image.Image]:
    return [Image.open(io.BytesIO(data)).convert("RGB") for data in jpegs]


def _wide_head(linear: torch.nn.Linear, features: torch.Tensor | None = None) -> None:
    """Wide random weights; given some photos' ``features`` (N, D), a bias that takes their mean out of the logits, so
    what tells photos apart decides the top-1, not what they share."""
    with torch.no_grad():
        linear.weight.normal_(0, HEAD_STD, generator=torch.Generator().manual_seed(1))
        linear.bias.copy_(torch.zeros(linear.out_features) if features is None else -linear.weight @ features.mean(0))


# --- timm ---------------------------------------------------------------------------------------------------------

def timm_checkpoint(path: Path, name: str, safetensors: bool = False) -> torch.nn.Module:
    """timm's ``name`` with a ``CLASSES`` head, saved at ``path`` as a state dict (or a safetensors file); returns it."""
    import timm

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=CLASSES).eval()
    _wide_head(model.get_classifier())
    if safetensors:
        from safetensors.torch import save_file

        save_file(model.state_dict(), str(path))
    else:
        torch.save(model.state_dict(), path)
    return model


def timm_reference(model: torch.nn.Module, jpegs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(top-1, embeddings) of timm's own eval transform and forward."""
    import timm.data

    transform = timm.data.create_transform(**timm.data.resolve_data_config({}, model=model))
    batch = torch.stack([transform(image) for image in pil_images(jpegs)])
    with torch.inference_mode():
        features = model.forward_head(model.forward_features(batch), pre_logits=True)
        return model(batch).argmax(1).numpy(), features.numpy()


# --- Hugging Face -------------------------------------------------------------------------------------------------

def hf_folder(folder: Path, kind: str) -> Path:
    """A tiny ``kind`` (vit, clip, siglip, dinov2) saved by ``save_pretrained`` with its image processor."""
    import transformers as t

    torch.manual_seed(0)
    # Initialised wider than transformers' default (0.02): at hidden size 32 that leaves every photo's embedding within
    # 0.05 cosine of every other's, so an embedding test could hardly fail; these spread them (cross-image cosine < 0.5).
    vision = dict(image_size=224, patch_size=32, initializer_range=0.2, initializer_factor=5.0, **SMALL)
    text = dict(vocab_size=64, bos_token_id=0, eos_token_id=1, pad_token_id=1, **SMALL)
    made = {
        "vit": lambda: (t.ViTForImageClassification(t.ViTConfig(**vision, num_labels=CLASSES,
                                                                 id2label=dict(enumerate(NAMES)))), t.ViTImageProcessor()),
        "clip": lambda: (t.CLIPModel(t.CLIPConfig(vision_config=vision, text_config=text, projection_dim=16,
                                                  initializer_factor=5.0)),
                         t.CLIPImageProcessor()),
        "siglip": lambda: (t.SiglipModel(t.SiglipConfig(vision_config=vision, text_config=text)), t.SiglipImageProcessor()),
        "dinov2": lambda: (t.Dinov2Model(t.Dinov2Config(**{**vision, "patch_size": 16})),
                           t.BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224},
                                               do_center_crop=True, resample=3, image_mean=[0.485, 0.456, 0.406],
                                               image_std=[0.229, 0.224, 0.225])),
    }
    model, processor = made[kind]()
    if kind == "vit":
        _wide_head(model.classifier)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def hf_reference(folder: Path, jpegs: list[bytes], backend: str = REFERENCE_BACKENDS[0]) -> tuple[np.ndarray | None, np.ndarray]:
    """(top-1 or None for an embedder, embeddings) of the folder's own processor and model."""
    import transformers as t

    processor = t.AutoImageProcessor.from_pretrained(folder, local_files_only=True, backend=backend)
    pixels = processor(images=pil_images(jpegs), return_tensors="pt")["pixel_values"]
    architecture = t.AutoConfig.from_pretrained(folder, local_files_only=True).architectures[0]
    model = getattr(t, architecture).from_pretrained(folder, local_files_only=True).eval()
    with torch.inference_mode():
        if architecture.endswith("ForImageClassification"):
            seen = []
            hook = model.classifier.register_forward_pre_hook(lambda _m, inputs: seen.append(inputs[0]))
            logits = model(pixel_values=pixels).logits
            hook.remove()
            return logits.argmax(1).numpy(), seen[0].numpy()
        if architecture == "Dinov2Model":
            return None, model(pixel_values=pixels).pooler_output.numpy()
        embeds = model.get_image_features(pixel_values=pixels)
        embeds = getattr(embeds, "pooler_output", embeds)  # transformers 5 returns the output object
        return None, torch.nn.functional.normalize(embeds, dim=-1).numpy()


# --- MLflow -------------------------------------------------------------------------------------------------------

MLFLOW_RECIPE = {"resize": 256, "crop": 224, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}


def mlflow_registered(root: Path, name: str = "pets", alias: str = "champion",
                      pickle: bool = False) -> tuple[str, torch.nn.Module]:
    """A torchvision ResNet-18 of ``CLASSES`` classes logged (pt2, or pickle) with its recipe and names into a sqlite
    store under ``root``, registered as ``name`` version 1 with ``alias``; returns (the tracking URI, and the module
    as logged). The store stays MLflow's current one (``mlflow.set_tracking_uri``); ``set_tracking_uri(None)`` ends it."""
    import mlflow
    import mlflow.pytorch
    from torchvision.models import resnet18

    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    experiment = f"{name}-experiment"
    if mlflow.get_experiment_by_name(experiment) is None:  # its artifacts under root, not ./mlruns where pytest runs
        mlflow.create_experiment(experiment, artifact_location=(root / "artifacts").as_uri())
    mlflow.set_experiment(experiment)
    torch.manual_seed(0)
    model = resnet18(num_classes=CLASSES).eval()
    _wide_head(model.fc, _pooled(model, [data for _, data in synthetic_rows(8, "jpeg", (320, 240), seed=99)]))
    with mlflow.start_run():
        info = mlflow.pytorch.log_model(model, name="model", input_example=np.zeros((2, 3, 224, 224), np.float32),
                                        metadata={"recipe": MLFLOW_RECIPE, "class_names": NAMES},
                                        serialization_format="pickle" if pickle else "pt2",
                                        pip_requirements=["torch"])  # not inferred: MLflow would load it in a subprocess
    version = mlflow.register_model(info.model_uri, name)
    mlflow.MlflowClient().set_registered_model_alias(name, alias, version.version)
    return uri, model


def mlflow_reference(model_uri: str, logged: torch.nn.Module, jpegs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(top-1 of the model MLflow loads, the pooled feature of the module as logged) on torchvision's transform of
    the logged recipe."""
    import mlflow.pytorch

    with torch.inference_mode():
        logits = mlflow.pytorch.load_model(model_uri)(_logged_transform(jpegs))
    return logits.argmax(1).numpy(), _pooled(logged, jpegs).numpy()


def _logged_transform(jpegs: list[bytes]) -> torch.Tensor:
    from torchvision import transforms

    recipe = MLFLOW_RECIPE
    transform = transforms.Compose([transforms.Resize(recipe["resize"]), transforms.CenterCrop(recipe["crop"]),
                                    transforms.ToTensor(), transforms.Normalize(recipe["mean"], recipe["std"])])
    return torch.stack([transform(image) for image in pil_images(jpegs)])


def _pooled(resnet: torch.nn.Module, jpegs: list[bytes]) -> torch.Tensor:
    """A torchvision ResNet's pooled feature (its fc's input) of ``jpegs`` on the logged recipe's pixels."""
    seen = []
    hook = resnet.fc.register_forward_pre_hook(lambda _m, inputs: seen.append(inputs[0]))
    with torch.inference_mode():
        resnet(_logged_transform(jpegs))
    hook.remove()
    return seen[0]


# --- one input and every source's model, for the engines' tests ---------------------------------------------------

PHOTOS = 24  # 12 at 320x240 and 12 at 500x375: 95% of them is all but one
MIN_AGREEMENT = 0.95  # of rows whose top-1 is the reference's
MIN_COSINE = 0.99  # each row's embedding against the reference's


@dataclass(frozen=True)
class SourceCase:
    root: Path
    ids: list[str]  # every input row's id, the bad one too
    tracking: str  # the MLflow store's URI
    argv: dict[str, list[str]]  # by model key: the options that name it
    top1: dict[str, dict[str, int] | None]  # by model key: the reference's top-1 by id; None for an embedder
    embeddings: dict[str, dict[str, np.ndarray]]  # by model key: the reference's embedding by id
    lineage: dict[str, str]  # by model key: the start of the model lineage column's value

    def command(self, key: str, output: Path, *extra: str) -> list[str]:
        outputs = ["--embeddings", "only"] if self.top1[key] is None else ["--embeddings", "with"]
        return ["--input", str(self.root / "in"), "--output", str(output), "--batch-size", "8", *self.argv[key], *outputs,
                *extra]


def write_source_case(root: Path) -> SourceCase:
    """The input (photos in three files) and every source's model under ``root``, with each model's own reference
    answers for the photos. No bad image: pyarrow 25 cannot read back a null fixed-size list (apache/arrow#35692),
    which an error row's embedding is, and MLflow 3.17 holds pyarrow below 26; error rows are every engine's own tests'."""
    from job.sample.synthetic import write_dataset
    from storage import resolve

    root.mkdir(parents=True, exist_ok=True)
    photos = [*synthetic_rows(PHOTOS // 2, "jpeg", (320, 240), seed=3), *synthetic_rows(PHOTOS // 2, "jpeg", (500, 375), seed=4)]
    rows = [(f"photo-{i}", data) for i, (_, data) in enumerate(photos)]
    write_dataset(resolve(str(root / "in")), iter(rows), rows_per_file=9)
    ids, jpegs = [i for i, _ in rows], [data for _, data in rows]
    argv, answers = {}, {}
    for key, name, file in (("timm-efficientnet", "test_efficientnet", "efficientnet.pt"), ("timm-vit", "test_vit", "vit.safetensors")):
        model = timm_checkpoint(root / file, name, safetensors=file.endswith(".safetensors"))
        argv[key], answers[key] = ["--model", f"timm:{name}", "--weights", str(root / file)], timm_reference(model, jpegs)
    for kind in ("vit", "clip", "siglip", "dinov2"):
        folder = hf_folder(root / f"hf-{kind}", kind)
        argv[f"hf-{kind}"], answers[f"hf-{kind}"] = ["--model", f"hf:{folder}"], hf_reference(folder, jpegs)
    tracking, logged = mlflow_registered(root)
    with current_store(tracking):  # after it, none: the tests name it (current_store), as a user's environment does
        for key, uri in (("mlflow-version", "models:/pets/1"), ("mlflow-alias", "models:/pets@champion")):
            argv[key], answers[key] = ["--model", uri], mlflow_reference("models:/pets/1", logged, jpegs)
    lineage = {key: "mlflow:models:/pets/1 sha256:" if key.startswith("mlflow") else f"{argv[key][1]} sha256:" for key in argv}
    return SourceCase(root, [i for i, _ in rows], tracking, argv,
                      {key: None if top1 is None else dict(zip(ids, map(int, top1))) for key, (top1, _) in answers.items()},
                      {key: dict(zip(ids, embeddings)) for key, (_, embeddings) in answers.items()}, lineage)


def assert_agrees(case: SourceCase, key: str, rows: list[dict], manifest: dict, lineage: str | None = None) -> None:
    """Every row's top-1 is the reference's on at least MIN_AGREEMENT of rows, and its embedding at cosine >=
    MIN_COSINE to the reference's and nearest its own image's (after the reference's mean is taken out); the lineage names the
    source (``lineage``: the start of its value, when the model was read from elsewhere than the case's own). The
    reference itself must tell the photos apart, or agreeing with it would prove nothing."""
    got = {row["id"]: row for row in rows}
    assert sorted(got) == sorted(case.ids) and len(rows) == len(case.ids) == manifest["counts"]["predicted"]
    good = case.ids
    assert all(got[i]["error"] is None for i in good), [got[i]["error"] for i in good if got[i]["error"]]
    if case.top1[key] is not None:
        reference = case.top1[key]
        assert len(set(reference.values())) >= 2, "the reference gives every photo one class"
        agreeing = sum(got[i]["label"] == reference[i] for i in good) / len(good)
        assert agreeing >= MIN_AGREEMENT, {i: (got[i]["label"], reference[i]) for i in good}
    mine = np.stack([np.asarray(got[i]["embedding"], np.float32) for i in good])
    theirs = np.stack([case.embeddings[key][i] for i in good])
    cosines = _unit(mine) @ _unit(theirs).T  # (photos, photos)
    assert np.diag(cosines).min() >= MIN_COSINE, np.diag(cosines)
    # A network's embeddings share much of their direction (a ResNet's pooled ReLU features: every pair of photos above
    # 0.99); what tells photos apart is each one's difference from their mean, and there each row must be nearest its own.
    centre = theirs.mean(axis=0)
    centred = _unit(mine - centre) @ _unit(theirs - centre).T
    assert (centred.argmax(axis=1) == np.arange(len(good))).all(), "a row's embedding is nearer another photo's"
    models = {row["model"] for row in rows}
    assert len(models) == 1 and models.pop().startswith(lineage or case.lineage[key]), "one model, by its source, wrote every row"


@contextmanager
def current_store(uri: str) -> Iterator[None]:
    """MLflow's current store is ``uri`` for the block (the environment a user sets, and MLflow's own setting, which
    wins over it in a process that has set one), and none after."""
    import mlflow

    before = os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)  # sets MLFLOW_TRACKING_URI too
    try:
        yield
    finally:
        mlflow.set_tracking_uri(before)


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
