"""How long N images take on a cluster, and the cluster a deadline needs: from a unit's measured rates.

A unit is one GPU with the vCPUs that feed it, or one CPU-only machine. Its rate:
- a GPU: min(the model alone on it, the CPU side per vCPU x its vCPUs): the slower side limits, and the line says which;
- a CPU-only machine: its cores decode and run the model in turn, so the two times add up per image:
  1 / (1 / (CPU side per vCPU x vCPUs) + 1 / the model on all its cores);
- a unit a table's nights measured whole: their rate, as they ran.
A cluster of U units does U times a unit's rate (linear: the engines' pools grow by unit; no more GPUs than measured
together were ever timed, so the lines say so), after the start-up: seconds = start-up + N / rate. For a deadline T,
U = ceil(N / ((T - start-up) x the unit's rate)). Nodes booting (an autoscaler's minutes) are not measured: not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from job.costs.rates import UnitRates
from job.errors import JobError

MODEL, CPU_SIDE, WHOLE = "the model", "the CPU side", "the nights as they ran"  # what limits a unit


@dataclass(frozen=True)
class Cluster:
    """What a night runs on, in units: GPUs (each with the vCPUs that feed it), or CPU-only machines."""

    units: int  # GPUs, or CPU-only machines
    vcpus_per_unit: int  # the vCPUs feeding each GPU; a CPU-only machine's vCPUs
    gpu: bool  # True: the units are GPUs

    def __post_init__(self) -> None:
        if self.units < 1 or self.vcpus_per_unit < 1:
            raise JobError(f"a cluster of {self.units} units of {self.vcpus_per_unit} vCPU: need at least 1 of each")

    @property
    def vcpus(self) -> int:
        return self.units * self.vcpus_per_unit


@dataclass(frozen=True)
class Estimate:
    """N images on a cluster: the rate, the time, what limits it."""

    cluster: Cluster
    images: int
    unit_images_per_sec: float  # one unit's rate
    limit: str  # MODEL, CPU_SIDE or WHOLE
    startup_seconds: float

    @property
    def images_per_sec(self) -> float:
        return self.cluster.units * self.unit_images_per_sec

    @property
    def seconds(self) -> float:
        return self.startup_seconds + self.images / self.images_per_sec


def unit_rate(rates: UnitRates, vcpus: int, gpu: bool) -> tuple[float, str]:
    """(images/s, what limits it) of one unit fed by ``vcpus`` vCPUs (see the module docstring)."""
    if rates.whole is not None:
        return rates.whole.images_per_sec, WHOLE
    model, cpu_side = rates.model.images_per_sec, rates.cpu.images_per_sec * vcpus
    limit = MODEL if model <= cpu_side else CPU_SIDE
    if gpu:
        return min(model, cpu_side), limit
    return 1 / (1 / cpu_side + 1 / model), limit  # the same cores decode, then run the model: the times add


def estimate(images: int, rates: UnitRates, cluster: Cluster) -> Estimate:
    if images < 0:
        raise JobError(f"--images {images}: expected 0 or more")
    rate, limit = unit_rate(rates, cluster.vcpus_per_unit, cluster.gpu)
    return Estimate(cluster, images, rate, limit, rates.startup_seconds)


def units_for_deadline(images: int, deadline_seconds: float, rates: UnitRates, vcpus_per_unit: int, gpu: bool) -> int:
    """The fewest units that score ``images`` within ``deadline_seconds``, start-up included."""
    working = deadline_seconds - rates.startup_seconds
    if working <= 0:
        raise JobError(f"--deadline {deadline_seconds:g} s is within the start-up alone ({rates.startup_seconds:g} s: "
                       f"{rates.startup_source}); give a later deadline")
    rate, _ = unit_rate(rates, vcpus_per_unit, gpu)
    return max(1, math.ceil(images / (working * rate)))


def vcpus_to_feed(rates: UnitRates) -> int | None:
    """The vCPUs per GPU at which the CPU side keeps up with the model alone (None: a unit measured whole)."""
    if rates.whole is not None:
        return None
    return math.ceil(rates.model.images_per_sec / rates.cpu.images_per_sec)


def model_share(rates: UnitRates, vcpus: int) -> float | None:
    """The share of the model's own rate a GPU fed by ``vcpus`` vCPUs reaches (None: measured whole)."""
    if rates.whole is not None:
        return None
    return min(1.0, rates.cpu.images_per_sec * vcpus / rates.model.images_per_sec)


def duration_text(seconds: float) -> str:
    """``2 h 05 min``, ``4 min 12 s`` or ``38.2 s``: for a person."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{seconds:.1f} s"
