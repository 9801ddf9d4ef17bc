"""A calibration on this machine: the CPU decode per core and the model per device, measured with the job's own code.

Use it where the shipped rates do not reach (this machine's CPU, a GPU they do not list, another model): ``measure``
times ``preprocess_batch`` on one thread (the CPU workers' code, with the run's recipe and resize path) over the
user's images or the built-in sample, and the job's ``Predictor`` on a batch already on this machine's device (the
model-only ceiling ``runners.compare`` reports), warm-up untimed, for a few seconds each; each the best of a few tries,
the least disturbed by other work on the machine. The start-up it records is its own: from the command to its first model batch (imports, the model's load, one batch; not an input's planning nor an
engine's start). ``record`` keeps it in a JSON file (default: the user's cache), so that a later ``runners.capacity``
finds it (``recorded``) for the same model on the same hardware, and says so.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field

from inference.spec import ModelSpec
from job.config import JobConfig
from job.costs.rates import Rate, UnitRates
from job.costs.shipped import DEFAULT_TABLE, engine_overhead
from job.errors import JobError
from job.input.plan import InputPlan, read_file
from job.sample.sample import sample_rows
from job.stages import image_cells
from preprocess import preprocess_batch
from preprocess.recipe import Recipe

CACHE_FILE = os.path.join("streaming-batch-inference", "calibrations.json")  # under $XDG_CACHE_HOME, else ~/.cache
IMAGES = 64  # decodable images timed: a few hundred milliseconds a repeat on one core
DECODE_REPEATS = 3  # best of: the least disturbed by other work on the machine
MODEL_BATCHES = 3  # timed at least, one at a time: the best of them


@dataclass(frozen=True)
class Calibration:
    """What one calibration measured, on what, with which model and options."""

    date: str  # UTC, YYYY-MM-DD
    hardware: dict  # job.report.hardware(): CPU model and count, GPUs
    device: str  # the model's device: the GPU's name, or "cpu"
    model: str  # the model's source as the job names it (resnet50, timm:..., hf:...)
    crop: int  # the recipe's crop: the model's input size
    precision: str
    batch_size: int
    cpu_resize: str  # the CPU workers' resize path (fast or exact)
    decode_per_core: float  # images/s of decode + resize + crop on one core
    model_per_device: float  # images/s of the model alone on the device (a CPU: all its cores)
    startup_seconds: float  # the command's start to the calibration's first model batch
    images: str  # what was decoded: "<n> images of <input>" or of the built-in sample
    versions: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.decode_per_core <= 0 or self.model_per_device <= 0:
            raise JobError(f"a calibration measured {self.decode_per_core} and {self.model_per_device} images/s: "
                           "run --calibrate again")

    @property
    def key(self) -> tuple:
        """What makes two calibrations measure the same thing: the same machine kind, device, model and options."""
        return (self.hardware.get("cpu"), self.hardware.get("cpu_count"), self.device, self.model, self.crop,
                self.precision, self.cpu_resize)

    def rates(self, engine: str, rates_table: str = DEFAULT_TABLE) -> UnitRates:
        """This calibration as a unit's rates for ``engine``: the CPU side adds the engine's own CPU per image, as the
        shipped ``rates_table`` measured it."""
        where = f"a calibration on {self.hardware.get('cpu_count')} x {self.hardware.get('cpu')} ({self.date})"
        overhead = engine_overhead(engine, rates_table)
        per_image = 1 / self.decode_per_core + (overhead[0] if overhead else 0.0)
        added = f" + {overhead[1]}" if overhead else f"; {engine}'s own CPU per image not measured"
        cpu = Rate(1 / per_image, 0.0, f"{where}: {self.decode_per_core:,.0f} images/s a core decoding {self.images}"
                                       f"{added}", "calibration")
        model = Rate(self.model_per_device, 0.0, f"{where}: {self.model} alone on {self.device}, {self.precision}, "
                                                 f"batch {self.batch_size}", "calibration")
        return UnitRates(self.device, model, cpu, self.startup_seconds,
                         f"{where}: its own start-up (imports, model load, first batch; no input planning or engine start)")


def cache_path() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), CACHE_FILE)


def record(calibration: Calibration, path: str) -> str:
    """Keep ``calibration`` in ``path`` (replacing one of the same key); returns the path."""
    kept = [c for c in _read(path) if c.key != calibration.key] + [calibration]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    staging = f"{path}.{os.getpid()}.tmp"
    with open(staging, "w") as f:
        json.dump({"calibrations": [asdict(c) for c in kept]}, f, indent=2)
    os.replace(staging, path)  # a reader sees the old file or the new, never half of one
    return path


def recorded(path: str, *, device: str, model: str, crop: int, precision: str, hardware: dict | None = None) -> Calibration | None:
    """The newest calibration in ``path`` of ``model`` at ``crop`` and ``precision`` on ``device`` (a GPU kind, matched
    by name, or "cpu": then on a CPU like ``hardware``'s); None: none (a missing file holds none)."""
    def fits(c: Calibration) -> bool:
        if (c.model, c.crop, c.precision) != (model, crop, precision):
            return False
        if device == "cpu":
            return c.device == "cpu" and hardware is not None and (c.hardware.get("cpu"), c.hardware.get("cpu_count")) == (
                hardware.get("cpu"), hardware.get("cpu_count"))
        return c.device != "cpu" and (device.upper() in c.device.upper() or c.device.upper() in device.upper())

    matching = [c for c in _read(path) if fits(c)]
    return max(matching, key=lambda c: c.date) if matching else None


def _read(path: str) -> list[Calibration]:
    if not os.path.exists(path):
        return []
    try:
        with open(path) as f:
            return [Calibration(**entry) for entry in json.load(f)["calibrations"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise JobError(f"{path}: not a calibrations file of this version ({e}); delete it or pass another "
                       "--calibration FILE, then --calibrate again") from e


def images_to_time(plan: InputPlan | None, config: JobConfig, recipe: Recipe) -> tuple[list[bytes], str]:
    """Up to ``IMAGES`` encoded images that decode, from the planned input (None: the built-in sample), and what they
    are in words; raw pixels are refused (a calibration times decoding)."""
    if plan is None:
        cells = [image for _, image in sample_rows()]
        where = "the built-in sample (640x480 JPEGs)"
    else:
        if plan.shape_columns or config.raw_shape:
            raise JobError(f"--calibrate times image decoding, but {config.input} holds raw pixels; calibrate on an encoded "
                           "input, or leave --input out to calibrate on the built-in sample")
        cells, where = _first_cells(plan, config.image_column), str(config.input)
    errors = preprocess_batch(cells, recipe, max_pixels=config.max_pixels).errors
    images = [cell for cell, error in zip(cells, errors) if error is None][:IMAGES]
    if not images:
        raise JobError(f"{where}: no decodable image among its first {len(cells)} rows to time")
    return images, f"{len(images)} images of {where}"


def _first_cells(plan: InputPlan, column: str) -> list[bytes]:
    cells: list[bytes] = []
    for file in plan.files:
        for _, batch in read_file(plan, file, 2 * IMAGES):
            cells += image_cells(batch.column(column), raw=False)[: 2 * IMAGES - len(cells)]
            if len(cells) >= 2 * IMAGES:  # twice as many as timed: some may not decode
                return cells
    return cells


def measure(spec: ModelSpec, images: list[bytes], described: str, *, device_name: str | None, precision: str,
            batch_size: int, cpu_resize: str, max_pixels: int, model_seconds: float, started_at: float,
            s3_endpoint_url: str | None = None) -> Calibration:
    """Time this machine: the model first (its first batch ends the start-up), then the decode on one core."""
    from job.report import hardware, versions
    from preprocess.benchmark import per_core_rate

    model_rate, used_precision, startup = _model_rate(spec, precision, batch_size, model_seconds, started_at, s3_endpoint_url)
    decode = per_core_rate(lambda batch: preprocess_batch(batch, spec.recipe, max_pixels=max_pixels, cpu_resize=cpu_resize),
                           images, DECODE_REPEATS)
    return Calibration(time.strftime("%Y-%m-%d", time.gmtime()), hardware(), device_name or "cpu", spec.source,
                       spec.recipe.crop, used_precision, batch_size, cpu_resize, round(decode, 1), round(model_rate, 2),
                       round(startup, 2), described, versions())


def _model_rate(spec: ModelSpec, precision: str, batch_size: int, seconds: float, started_at: float,
                s3_endpoint_url: str | None) -> tuple[float, str, float]:
    """(images/s of the model alone, the precision it ran at, seconds from the command's start to its first batch).

    The job's ``Predictor`` on a batch already on the device (``inference.benchmark``'s ceiling), one batch at a
    time for at least ``seconds`` and ``MODEL_BATCHES`` batches after one untimed: the best batch's rate, the least
    disturbed by other work on the machine, as the decode's best of ``DECODE_REPEATS``.
    """
    from inference import Predictor, choose_device, load_model  # torch: only a calibration loads it
    import torch

    device = choose_device()
    predictor = Predictor(load_model(spec, s3_endpoint_url=s3_endpoint_url), device, precision, 1, batch_size=batch_size)
    crop = spec.recipe.crop
    batch = torch.randint(0, 256, (batch_size, crop, crop, 3), dtype=torch.uint8).to(device)  # (B, H, W, 3)
    predictor(batch)  # returns host arrays: each call is waited for
    startup = time.time() - started_at
    predictor(batch)  # warm-up, untimed: allocations, cuDNN's autotuning
    timed: list[float] = []
    begun = time.perf_counter()
    while len(timed) < MODEL_BATCHES or time.perf_counter() - begun < seconds:
        started = time.perf_counter()
        predictor(batch)
        timed.append(time.perf_counter() - started)
    return batch_size / min(timed), predictor.precision, startup
