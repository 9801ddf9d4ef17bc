"""How a run computes, decided once: ``Execution``, the frozen plan every stage reads.

The driver resolves it (``decide``) from four things, after the engine has started and before
any work: the user's options (``JobConfig``), the model they name (``model_for``: a
``ModelSpec``, described once, which carries the recipe, the class names and the embedding
size), what the engine can do (``Capabilities``, from its ``Engine`` record) and what its
predictors will run on (``Devices``, which the started engine reports). The manifest records
it; the stages (``job.stages``) take it; no engine rewrites it.

The defaults live here, in one place (``decide``, ``default_precision`` and the constants above
them): the predictors take what is decided and choose nothing. With a GPU they
are what a GPU has run: CPU decode and an eager model (3,400 images/s steady from JPEG on one
H100, 2026-11-23). ``--decode gpu|auto`` and ``--compile auto`` (compile by job size) are one
flag away and become defaults only once BENCHMARKS.md shows them at least as fast on a GPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from inference.compile import compile_by_size
from inference.dtypes import EmbeddingDtype, Precision
from inference.describe import describe_model
from inference.spec import ModelSpec
from job.config import JobConfig
from job.errors import JobError
from preprocess import CpuResize
from preprocess.batch import require_fast_libraries
from preprocess.recipe import Recipe
from preprocess.routing import DECODE_MODES, DecodeMode

DeviceKind = Literal["cuda", "cpu"]
BATCH_SIZE_GPU = 256  # ResNet50 at 224px in bf16: large enough to saturate an A10G..H100, a few GB
BATCH_SIZE_CPU = 32  # CPU inference gains nothing past this and holds memory longer
# What a GPU has run (see the module docstring): the defaults with a GPU until GPU figures move them.
DEFAULT_DECODE: DecodeMode = "cpu"
DEFAULT_COMPILE = "off"
# The CPU workers' resize: OpenCV's, within the recipe's stated tolerance, 1.4-1.7x Pillow's images per core on
# photo-like JPEGs (BENCHMARKS.md); --cpu-resize exact keeps Pillow's pixels.
DEFAULT_CPU_RESIZE: CpuResize = "fast"
DEFAULT_TOPK = 5  # labels kept per image, lowered to the class count for smaller heads (a 2-class model: 2)
# GPUs without bf16 (before Ampere), by the names Ray and the clouds give them: fp16 there.
NO_BF16_GPUS = ("K80", "M60", "P4", "P40", "P100", "V100", "T4")


@dataclass(frozen=True)
class Capabilities:
    """What an engine's stages can run; the driver refuses what is not here, before any work."""

    decodes: tuple[DecodeMode, ...] = DECODE_MODES  # --decode modes its stages run
    adapts_auto: bool = True  # --decode auto follows the device's feedback; False: it keeps its starting split


@dataclass(frozen=True)
class Devices:
    """What the engine's predictors run on, as the started engine reports it."""

    kind: DeviceKind
    name: str | None = None  # e.g. "H100", "NVIDIA A10G"; None: not known to the engine

    @property
    def bf16(self) -> bool:
        """Whether the device computes in bf16: Ampere and newer GPUs. An unknown GPU is taken not to."""
        if self.kind != "cuda" or self.name is None:
            return False
        return not any(old in self.name.upper() for old in NO_BF16_GPUS)


@dataclass(frozen=True)
class Execution:
    """How this run computes. Every field is decided; ``reasons`` says where each came from."""

    device: DeviceKind  # where the predictors run
    device_name: str | None  # the GPU's name when the engine knows it (precision's default follows it)
    decode: DecodeMode  # who decodes JPEGs (job.stages.Preprocess routes by it)
    auto_adapts: bool  # decode "auto": whether its split follows the device (False: it stays at its start)
    batch_size: int  # images per model call
    precision: Precision
    compile: bool  # torch.compile the model (batches padded to batch_size)
    model: ModelSpec  # what every predictor loads (inference.load_model): architecture, weights, names, recipe
    topk: int  # labels kept per image: --topk, else DEFAULT_TOPK or the class count when smaller
    predictions: bool  # the prediction columns (label, score, top-k, their names); False: --embeddings only
    embeddings: EmbeddingDtype | None  # the embedding column's element type; None: no embedding column
    cpu_resize: CpuResize = DEFAULT_CPU_RESIZE  # how the CPU workers resize (preprocess.batch): fast or exact
    reasons: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)

    @property
    def recipe(self) -> Recipe:
        """The pixels the model wants: resize, crop, mean, std (the model's, so there is one)."""
        return self.model.recipe

    def to_dict(self) -> dict:
        """As the manifest records it (the recipe also on its own, at ``execution.recipe`` where readers of the manifest look for it)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {**fields, "model": self.model.to_dict(), "recipe": self.recipe.to_dict(), "reasons": dict(self.reasons)}

    @classmethod
    def from_dict(cls, data: dict) -> Execution:
        """``to_dict``'s inverse (the SageMaker archive carries the plan to the container this way)."""
        fields = {key: value for key, value in data.items() if key != "recipe"}  # the recipe is the model's
        return cls(**{**fields, "model": ModelSpec.from_dict(data["model"])})


def this_machine() -> Devices:
    """This machine's first GPU, else its CPU: where the local baseline (and compare's model-only line) computes."""
    from inference.device import choose_device, device_name  # torch: only a caller that computes here asks

    device = choose_device()
    return Devices(device.type, device_name(device))


def model_for(config: JobConfig) -> ModelSpec:
    """The model ``config`` names, described once (``inference.describe_model``), and checked against the options.

    Raises ``WeightsError`` for a model, weights, names or a recipe that cannot be used, ``JobError`` for a
    ``--topk`` above the class count or predictions asked of an embedder: all before any image is decoded.
    """
    model = describe_model(config.weights, model=config.model, labels=config.labels,
                           recipe_overrides=config.recipe_overrides(), s3_endpoint_url=config.s3_endpoint_url)
    if model.embedder and config.embeddings != "only":
        raise JobError(f"--model {config.model} is an embedder ({model.embedding}): it has no classes to predict; "
                       "pass --embeddings only")
    if config.topk is not None and config.topk > model.num_classes and config.embeddings != "only":
        # Refused, not lowered: the user asked for that many columns' worth; the default is lowered instead.
        raise JobError(f"--topk {config.topk}: the model has {model.num_classes} classes; pass --topk {model.num_classes} "
                       f"or fewer, or leave --topk out (then {min(DEFAULT_TOPK, model.num_classes)})")
    return model


def decide(config: JobConfig, capabilities: Capabilities, devices: Devices, images: int, *,
           model: ModelSpec, engine: str = "this engine") -> Execution:
    """The one place a run's decode mode, batch size, precision, compile and outputs are chosen.

    ``images``: the rows this run computes (the compile-by-size rule weighs them); ``model``:
    ``model_for(config)``. Raises ``JobError`` naming the option and the fix for what the engine
    or the device cannot run.
    """
    reasons: dict[str, str] = {}
    decode = _chosen("decode", config.decode, DEFAULT_DECODE, reasons)
    cpu_resize = _chosen("cpu_resize", config.cpu_resize, DEFAULT_CPU_RESIZE, reasons)
    if cpu_resize == "fast":
        try:
            require_fast_libraries()
        except ImportError as e:
            raise JobError(str(e)) from e
    require_capable(decode, capabilities, engine)
    batch = BATCH_SIZE_GPU if devices.kind == "cuda" else BATCH_SIZE_CPU
    batch_size = _chosen("batch_size", config.batch_size, batch, reasons, f"the default on {devices.kind}")
    precision = _chosen("precision", config.precision, default_precision(devices), reasons,
                        f"the default on {devices.name or devices.kind}")
    _check_precision(precision, devices)
    compile_option = _chosen("compile", config.compile, DEFAULT_COMPILE, reasons)
    compiled = compile_option == "on" or (compile_option == "auto" and compile_by_size(images, devices.kind))
    topk = _chosen("topk", config.topk, min(DEFAULT_TOPK, model.num_classes), reasons,
                   f"the default ({DEFAULT_TOPK}, at most the class count)")
    return Execution(device=devices.kind, device_name=devices.name, decode=decode, auto_adapts=decode == "auto" and capabilities.adapts_auto,
                     batch_size=batch_size, precision=precision, compile=compiled, model=model, topk=topk,
                     predictions=config.embeddings != "only",
                     embeddings=None if config.embeddings == "off" else config.embedding_dtype, cpu_resize=cpu_resize,
                     reasons=reasons)


def require_capable(decode: str | None, capabilities: Capabilities, engine: str) -> None:
    """Refuse a --decode mode the engine cannot run (``job.driver.main`` asks before planning, ``decide`` again)."""
    if decode is not None and decode not in capabilities.decodes:
        raise JobError(f"--decode {decode}: {engine} decodes with {', '.join(capabilities.decodes)} only; "
                       f"pass --decode {capabilities.decodes[0]}")


def _chosen(name: str, given: object, default: object, reasons: dict[str, str], why: str = "the default") -> object:
    reasons[name] = "--" + name.replace("_", "-") if given is not None else why
    return given if given is not None else default


def default_precision(devices: Devices) -> Precision:
    """bf16 on GPUs that have it (Ampere+), fp16 on other GPUs, fp32 on CPU: the one rule, for jobs and benchmarks."""
    if devices.kind != "cuda":
        return "fp32"
    return "bf16" if devices.bf16 else "fp16"


def _check_precision(precision: str, devices: Devices) -> None:
    if precision == "fp16" and devices.kind == "cpu":
        raise JobError("--precision fp16 needs a GPU, and the predictors run on CPU; use fp32 or bf16")
    if precision == "bf16" and devices.kind == "cuda" and devices.name is not None and not devices.bf16:
        raise JobError(f"--precision bf16: {devices.name} has no bf16; use fp16")

