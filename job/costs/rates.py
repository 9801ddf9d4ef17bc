"""A measured rate and where it came from: what every estimate of this project is made of.

``Rate`` is one figure (images/s, and the start-up before it) with its source in words, for the line a user reads:
"this table's last 3 nights (local, 2026-12-05..07)", "a calibration on this machine (2026-12-07)", "shipped rates:
ResNet50 on one H100 + 16 vCPU, 2026-11-26 (BENCHMARKS.md)". ``table_rate`` is a table's own: the median of its
newest finished nights (``job.costs.history``). ``job.costs.sizing`` turns rates into time and clusters.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from job.costs.history import Night, read_nights
from job.errors import JobError
from storage import Location

KINDS = ("history", "calibration", "shipped")  # where a rate can come from, the firmest first


@dataclass(frozen=True)
class Rate:
    """A measured rate of whole nights (or of a calibration), and where it came from."""

    images_per_sec: float  # steady images/s of the whole pipeline (or of the part a calibration measured)
    startup_seconds: float  # from the command to the first model batch (0 when not known: the source says so)
    source: str  # in words, for a line the user reads (see the module docstring)
    kind: str  # one of KINDS

    def __post_init__(self) -> None:
        if not self.images_per_sec > 0 or self.startup_seconds < 0:
            raise JobError(f"a rate needs images/s > 0 and start-up >= 0 s, got {self.images_per_sec} images/s, "
                           f"{self.startup_seconds} s ({self.source}): measure it again")
        if self.kind not in KINDS or not self.source:
            raise JobError(f"a rate's kind is one of {', '.join(KINDS)} and it names its source; got {self.kind!r}, "
                           f"{self.source!r}")

    def seconds_for(self, images: int) -> float:
        """Start-up, then ``images`` at this rate."""
        return self.startup_seconds + images / self.images_per_sec


@dataclass(frozen=True)
class UnitRates:
    """What one unit of a cluster does, each side with its source: a GPU with the vCPUs that feed it, or a CPU-only
    machine. ``job.costs.sizing`` combines the sides; ``whole``, where a table's nights measured the unit as a whole,
    stands instead of them."""

    device: str  # the GPU's name (or kind), or "cpu": a CPU-only machine
    model: Rate | None  # the model alone on one device (a GPU; a CPU-only machine: all its cores)
    cpu: Rate | None  # the CPU side (decode, resize, the pipeline's own work): images/s per vCPU
    startup_seconds: float  # command to the first model batch
    startup_source: str  # where that figure came from, or why it is 0 ("not measured")
    whole: Rate | None = None  # the unit measured whole (a table's nights: per GPU, or per machine)
    measured_vcpus: int | None = None  # vCPUs per unit the CPU side was measured at: beyond them it is extrapolated

    def __post_init__(self) -> None:
        if self.whole is None and (self.model is None or self.cpu is None):
            raise JobError(f"rates for {self.device}: need the model's and the CPU side's, or a whole unit's")


def table_rate(output: Location, *, engine: str | None = None, model: str | None = None, last: int = 3) -> Rate | None:
    """The rate of this table's own recent finished nights (their _history/ manifests: steady images/s, else
    images_per_sec; start-up), the newest `last` with a steady figure, for `engine` and `model` (the rows' model
    label, job.night.options.model_label of the manifest's output_options) when given; None: no such night.

    "With a steady figure" reads as "with a figure": a night too small for a steady rate counts with its whole run's
    images/s, and the source says so. The rate is the median of theirs, and so is the start-up.
    """
    if last < 1:
        raise JobError(f"last={last}: take at least one night")
    nights = [n for n in read_nights(output) if n.finished and n.scored > 0 and n.rate
              and (engine is None or n.engine == engine) and (model is None or n.model == model)][-last:]
    return nights_rate(nights) if nights else None


def nights_rate(nights: list[Night]) -> Rate:
    """The median rate of ``nights`` (each with a rate) and their median start-up, with their source in words."""
    startups = [n.startup_seconds for n in nights if n.startup_seconds is not None]
    return Rate(statistics.median(n.rate for n in nights), statistics.median(startups) if startups else 0.0,
                nights_source(nights, started=bool(startups)), "history")


def nights_source(nights: list[Night], started: bool = True) -> str:
    """``this table's last 3 nights (local on 2 x AMD EPYC, no GPU, 2026-12-05..07; steady images/s)``."""
    span = _span(sorted(n.at.strftime("%Y-%m-%d") for n in nights if n.at is not None))
    steady = sum(n.steady_images_per_sec is not None for n in nights)
    figure = ("steady images/s" if steady == len(nights) else "whole-run images/s: too few batches for a steady rate"
              if not steady else f"steady images/s, whole-run where too few batches ({len(nights) - steady})")
    count = "night" if len(nights) == 1 else f"{len(nights)} nights"
    engines = ", ".join(sorted({n.engine or "?" for n in nights}))
    return (f"this table's last {count} ({engines} on {hardware_text(nights[-1])}, {span}; {figure}"
            f"{'' if started else '; start-up not recorded'})")


def _span(dates: list[str]) -> str:
    """``2026-12-05..07`` (one month), ``2026-11-30..2026-12-02``, one date, or "undated"."""
    if not dates:
        return "undated"
    first, last = dates[0], dates[-1]
    if first == last:
        return first
    return f"{first}..{last[8:]}" if first[:8] == last[:8] else f"{first}..{last}"


def hardware_text(night: Night) -> str:
    """``2 x AMD EPYC, no GPU`` or ``1 x NVIDIA H100 80GB HBM3 + 16 vCPU``: what the figures were measured on."""
    hardware = night.hardware
    cpu = f"{hardware.get('cpu_count', '?')} x {hardware.get('cpu', 'unknown CPU')}"
    if not night.gpus:
        return f"{cpu}, no GPU"
    names = hardware.get("gpus") or ["GPU"]
    return f"{night.gpus} x {names[0]} + {cpu}"
