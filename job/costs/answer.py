"""A capacity question answered: the cluster, its time, its dollars, and every figure's source, as lines and as JSON.

``runners.capacity`` builds a ``Question`` (the images, the deadline, the engine, the hardware) and hands it with the
chosen rates (``job.costs.choose``) to ``answer``: with a deadline, the fewest GPUs (or machines) that meet it, rounded
up to whole instances; without one, the cluster asked about. ``Answer.lines`` is what a person reads, ``to_dict``
what ``--json`` prints.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from job.costs.layout import Layout, gpus_used, layout
from job.costs.prices import Instance, Price
from job.costs.rates import UnitRates
from job.costs.sizing import WHOLE, Cluster, Estimate, duration_text, estimate, model_share, units_for_deadline, vcpus_to_feed
from job.errors import JobError

BOOTING = "nodes booting (an autoscaler's minutes) not measured, not counted"


@dataclass(frozen=True)
class Question:
    """What a user asks: N images by a deadline (or on a cluster), with an engine, on some hardware."""

    images: int
    deadline_seconds: float | None  # None: how long on the cluster ``units`` describes
    engine: str
    device: str  # a GPU kind or name, or "cpu"
    vcpus_per_unit: int  # the vCPUs feeding each GPU; a CPU-only machine's
    units: int = 1  # without a deadline: GPUs (or machines) asked about
    max_units: int | None = None  # the most the engine can use (the local engine: one device)
    instance: Instance | None = None  # the GPU nodes' type (None: a GPU kind alone, or this machine)
    cpu_instance: Instance | None = None  # Ray's CPU-only decoders' group
    head: Instance | None = None  # Ray's head node
    unit_price: Price | None = None  # without an instance: one unit an hour (--price-per-hour)
    describe: str = ""  # the model and options, in words, for the first line

    def __post_init__(self) -> None:
        if self.images < 0 or self.units < 1 or (self.deadline_seconds is not None and self.deadline_seconds <= 0):
            raise JobError(f"images {self.images}, units {self.units}, deadline {self.deadline_seconds}: expected "
                           "images >= 0, at least one GPU or machine, a deadline above 0")

    @property
    def gpu(self) -> bool:
        return self.device != "cpu"


@dataclass(frozen=True)
class Answer:
    """The cluster that answers a question, its estimate, and the rates it rests on."""

    question: Question
    rates: UnitRates  # each with its source: the lines quote them
    estimate: Estimate  # on the cluster chosen (with a deadline) or asked about
    layout: Layout | None  # its instances (None: no instance type named, so no deploy layout)
    notes: tuple[str, ...]  # what is not measured, or extrapolated, for this answer

    @property
    def fits(self) -> bool | None:
        deadline = self.question.deadline_seconds
        return None if deadline is None else self.estimate.seconds <= deadline

    @property
    def dollars(self) -> float | None:
        """The estimated seconds at the instances' list prices, or at --price-per-hour a unit; None: no price."""
        if self.layout is not None:
            return self.layout.dollars(self.estimate.seconds)
        price = self.question.unit_price
        units = self.estimate.cluster.units
        return None if price is None else round(price.usd_per_hour * units * self.estimate.seconds / 3600, 2)

    def to_dict(self) -> dict:
        cluster, est = self.estimate.cluster, self.estimate
        return {
            "images": est.images, "engine": self.question.engine, "device": self.question.device,
            "deadline_seconds": self.question.deadline_seconds, "fits": self.fits,
            "seconds": round(est.seconds, 1), "images_per_sec": round(est.images_per_sec, 2), "limit": est.limit,
            "gpus": cluster.units if cluster.gpu else 0, "machines": 0 if cluster.gpu else cluster.units,
            "vcpus_per_gpu" if cluster.gpu else "vcpus_per_machine": cluster.vcpus_per_unit,
            "instances": self._instances(),
            "nodes": [{"instance": n.instance.name, "count": n.count, "role": n.role} for n in self.layout.nodes]
            if self.layout else [],
            "dollars": self.dollars, "price": self._price_text(),
            "rates": {"model": _rate(self.rates.model), "cpu_per_vcpu": _rate(self.rates.cpu),
                      "whole_per_unit": _rate(self.rates.whole), "startup_seconds": self.rates.startup_seconds,
                      "startup_source": self.rates.startup_source},
            "notes": list(self.notes),
        }

    def _instances(self) -> dict[str, int]:
        """Instances by type, every role counted (Spark's driver is a node of the workers' type)."""
        counts: dict[str, int] = {}
        for nodes in self.layout.nodes if self.layout else ():
            counts[nodes.instance.name] = counts.get(nodes.instance.name, 0) + nodes.count
        return counts

    def lines(self) -> list[str]:
        q, est, rates = self.question, self.estimate, self.rates
        lines = [f"capacity: {est.images:,} images{q.describe} with {q.engine} on {_device(q)}"]
        if rates.whole is not None:
            lines.append(f"  rate: {rates.whole.images_per_sec:,.1f} images/s a {_unit(q)} ({rates.whole.source})")
        else:
            lines.append(f"  model: {rates.model.images_per_sec:,.1f} images/s on one {_unit_device(q)} ({rates.model.source})")
            lines.append(f"  CPU side: {rates.cpu.images_per_sec:,.1f} images/s a vCPU ({rates.cpu.source})")
        lines.append(f"  start-up: {rates.startup_seconds:.1f} s ({rates.startup_source})")
        limit = "as the table's nights ran" if est.limit == WHOLE else f"{est.limit} limits{self._share_text()}"
        exact = f" ({est.seconds:,.1f} s)" if est.seconds >= 60 else ""
        lines.append(f"  {self._cluster_text()}: {est.images_per_sec:,.1f} images/s, {limit} -> "
                     f"{duration_text(est.seconds)}{exact}{self._fit_text()}")
        lines.append(f"  $: {self._price_text()}")
        return lines + [f"  note: {note}" for note in self.notes]

    def _cluster_text(self) -> str:
        cluster = self.estimate.cluster
        units = (f"{cluster.units} GPU{'s' if cluster.units > 1 else ''} x {cluster.vcpus_per_unit} vCPU" if cluster.gpu
                 else f"{cluster.units} machine{'s' if cluster.units > 1 else ''} x {cluster.vcpus_per_unit} vCPU")
        return f"{units} ({self.layout.text()})" if self.layout else units

    def _share_text(self) -> str:
        share = model_share(self.rates, self.estimate.cluster.vcpus_per_unit) if self.question.gpu else None
        return f" (the GPU at {share:.0%} of the model alone)" if share is not None and share < 1 else ""

    def _fit_text(self) -> str:
        if self.fits is None:
            return ""
        left = self.question.deadline_seconds - self.estimate.seconds
        return f": fits the {duration_text(self.question.deadline_seconds)}, {duration_text(abs(left))} " + (
            "to spare" if left >= 0 else "over: the deadline is not met")

    def _price_text(self) -> str:
        if self.dollars is None:
            missing = ", ".join(self.layout.unpriced) if self.layout else "this hardware"
            return f"no price for {missing} (pass --price-per-hour USD)"
        if self.layout is None:
            price = self.question.unit_price
            return f"${self.dollars:,.2f} at ${price.usd_per_hour:,.3f} an hour a unit ({price.source}; {BOOTING})"
        source = "; ".join(dict.fromkeys(n.instance.price.source for n in self.layout.nodes))
        return f"${self.dollars:,.2f} at ${self.layout.usd_per_hour:,.3f} an hour ({source}; {BOOTING})"


def answer(question: Question, rates: UnitRates) -> Answer:
    """The cluster that answers ``question`` with ``rates``, its time and cost (see the module docstring)."""
    units = question.units
    if question.deadline_seconds is not None:
        units = units_for_deadline(question.images, question.deadline_seconds, rates, question.vcpus_per_unit, question.gpu)
    if question.max_units is not None:
        units = min(units, question.max_units)
    laid = None
    if question.instance is not None and question.gpu:  # whole instances: every GPU of them runs (Ray, Spark)
        per_instance = gpus_used(question.engine, question.instance)
        units = math.ceil(units / per_instance) * per_instance
    cluster = Cluster(units, question.vcpus_per_unit, question.gpu)
    if question.instance is not None and question.gpu:
        laid = layout(question.engine, cluster, question.instance, question.cpu_instance, question.head)
    est = estimate(question.images, rates, cluster)
    return Answer(question, rates, est, laid, tuple(_notes(question, rates, est)))


def _notes(question: Question, rates: UnitRates, est: Estimate) -> list[str]:
    notes = [f"{BOOTING}; the estimate starts when the command does"]
    measured = rates.measured_vcpus
    if question.gpu and measured is not None and est.cluster.vcpus_per_unit > measured:
        notes.append(f"{est.cluster.vcpus_per_unit} vCPU a GPU is beyond the {measured} measured: the CPU side is "
                     "extrapolated from it, linearly")
    feed = vcpus_to_feed(rates)
    if question.gpu and feed is not None and feed > est.cluster.vcpus_per_unit:
        notes.append(f"{feed} vCPU a GPU would feed the model alone (--vcpus-per-gpu {feed}"
                     f"{'; beyond what was measured' if measured is not None and feed > measured else ''})")
    if est.cluster.units > 1:
        unit = "GPU" if question.gpu else "machine"
        notes.append(f"{est.cluster.units} {unit}s at {est.cluster.units} x one {unit}'s rate: the engine's pools grow a "
                     f"{unit} at a time, and one {unit} is what the rates measured")
    if question.max_units is not None and question.deadline_seconds is not None and est.seconds > question.deadline_seconds:
        notes.append(f"the {question.engine} engine runs on {question.max_units} device: for this deadline, use "
                     "--engine ray or spark on a cluster")
    return notes


def _rate(rate: object) -> dict | None:
    return None if rate is None else dataclasses.asdict(rate)


def _device(q: Question) -> str:
    if q.instance is not None:
        return f"{q.instance.name} ({q.instance.gpus} x {q.instance.gpu}, {q.instance.vcpus} vCPU)" if q.gpu else q.instance.name
    return f"{q.device} GPUs" if q.gpu else f"this machine's CPU ({q.vcpus_per_unit} vCPU)"


def _unit(q: Question) -> str:
    return "GPU" if q.gpu else "machine"


def _unit_device(q: Question) -> str:
    return q.device if q.gpu else "machine (all its cores)"
