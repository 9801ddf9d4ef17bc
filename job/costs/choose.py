"""Which measured rates answer a capacity question: the firmest there is for this engine, model and hardware.

In order: a calibration made now (``--calibrate``: asked for, so used); this table's own nights with this engine and
model on this hardware (whole nights: their images, their engine's overheads, their start-up); a recorded
calibration of this model on this hardware; the shipped rates table. None fits: "not measured", in one line naming
how to measure it. The hardware is a GPU kind (its name, e.g. H100) or "cpu" with the machine's CPU (``hardware``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from job.costs import calibration, shipped
from job.costs.history import Night, read_nights
from job.costs.rates import UnitRates, nights_rate
from job.errors import JobError
from storage import Location

LAST_NIGHTS = 3  # a table's rate is the median of its newest nights: one odd night moves it little


@dataclass(frozen=True)
class Wanted:
    """What the rates must have been measured with."""

    engine: str
    model: str  # the model's source (resnet50, timm:..., hf:...)
    label: str  # the model as the rows name it (a table's nights are matched by it)
    crop: int
    precision: str
    device: str  # a GPU kind or name, or "cpu"
    hardware: Mapping  # the CPU machine a "cpu" device means (job.report.hardware's shape)


def rates_for(wanted: Wanted, *, output: Location | None, calibration_file: str, rates_table: str = shipped.DEFAULT_TABLE,
              calibrated: calibration.Calibration | None = None) -> UnitRates:
    """The unit rates that answer for ``wanted`` (see the module docstring); raises JobError: not measured."""
    if calibrated is not None:
        return calibrated.rates(wanted.engine, rates_table)
    nights = _nights(wanted, output) if output is not None else []
    if nights:
        return _from_nights(wanted, nights)
    recorded = calibration.recorded(calibration_file, device=wanted.device, model=wanted.model, crop=wanted.crop,
                                    precision=wanted.precision, hardware=dict(wanted.hardware))
    if recorded is not None:
        return recorded.rates(wanted.engine, rates_table)
    found = shipped.gpu_rates(wanted.device, wanted.engine, wanted.model, wanted.crop, wanted.precision, rates_table)
    if found is not None:
        return found
    raise JobError(f"{wanted.model} at {wanted.crop} px, {wanted.precision}, on {_device_text(wanted)}: not measured (no "
                   f"calibration in {calibration_file}, no night of {wanted.engine} on it in --output's history, no "
                   "shipped figure); measure it: --calibrate on such a machine (its file: --calibration FILE), or a night "
                   "of the job with --output its table")


def _nights(wanted: Wanted, output: Location) -> list[Night]:
    """The table's newest finished nights of this engine and model, on this hardware, with a rate."""
    return [n for n in read_nights(output) if n.finished and n.scored and n.rate and n.engine == wanted.engine
            and n.model == wanted.label and _same_hardware(n, wanted)][-LAST_NIGHTS:]


def _same_hardware(night: Night, wanted: Wanted) -> bool:
    if wanted.device == "cpu":
        return not night.gpus and (night.hardware.get("cpu"), night.hardware.get("cpu_count")) == (
            wanted.hardware.get("cpu"), wanted.hardware.get("cpu_count"))
    names = [name.upper() for name in night.hardware.get("gpus") or ()]
    return bool(night.gpus) and any(wanted.device.upper() in name or name in wanted.device.upper() for name in names)


def _from_nights(wanted: Wanted, nights: list[Night]) -> UnitRates:
    """The nights' median rate, per GPU (a GPU's share of the nights' GPUs) or per machine, and their start-up."""
    rate = nights_rate(nights)
    gpus = nights[-1].gpus
    per_unit = rate if gpus <= 1 else dataclasses.replace(rate, images_per_sec=rate.images_per_sec / gpus,
                                                          source=f"{rate.source}, a GPU's share of {gpus}")
    return UnitRates(wanted.device, None, None, rate.startup_seconds, rate.source, whole=per_unit)


def _device_text(wanted: Wanted) -> str:
    if wanted.device != "cpu":
        return f"{wanted.device} GPUs with {wanted.engine}"
    return f"{wanted.hardware.get('cpu_count')} x {wanted.hardware.get('cpu')} (CPU only) with {wanted.engine}"
