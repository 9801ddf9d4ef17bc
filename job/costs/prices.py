"""Dollars per hour, and what an instance type holds: to turn images/sec into dollars, and a count into a cluster.

``runners.compare`` prices each engine: ``--price-per-hour ray=1.2,spark=0.9`` (per engine), or ``--instance
g5.xlarge`` looked up in ``prices.json`` beside this module (list prices with their date and source). Explicit prices
win over the table. SageMaker bills ``ml.<instance>`` at its own, higher rate, so with ``--instance`` it is priced only
when the table lists ``ml.<instance>``. An engine without a price gets no dollars per million images rather than a
guess. ``runners.capacity`` asks ``instance`` for an instance type's vCPUs, GPUs and price (None: "no price").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from job.errors import JobError

DEFAULT_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prices.json")  # package data: installed with it
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    source: str  # "--price-per-hour", or the instance type and the table's label


@dataclass(frozen=True)
class Instance:
    """An instance type as the table lists it: what it holds and what it costs."""

    name: str  # e.g. g5.xlarge
    vcpus: int  # vCPUs of one instance
    gpus: int  # GPUs of one instance (0: CPU only)
    gpu: str | None  # the GPU's kind as the figures name it (H100, A10G...); None: CPU only
    price: Price | None  # None: the table lists no price for it ("no price", never a guess)

    def __post_init__(self) -> None:
        if self.vcpus < 1 or self.gpus < 0 or (self.gpus > 0) != (self.gpu is not None):
            raise JobError(f"instance {self.name}: expected vcpus >= 1 and a GPU kind exactly when gpus > 0, "
                           f"got vcpus={self.vcpus}, gpus={self.gpus}, gpu={self.gpu!r}: fix the price table")


def instance(name: str, table_path: str = DEFAULT_TABLE, billed_as: str | None = None) -> Instance:
    """The instance type ``name`` from the table; ``billed_as``: the name its price is listed under (SageMaker's
    ``ml.<name>``). Raises JobError naming the types the table knows."""
    table = _load_table(table_path)
    facts = table.get("instances", {})
    if name not in facts:
        raise JobError(f"--instance {name}: not in {table_path} (it lists {', '.join(sorted(facts))}); "
                       "pass --gpu KIND and --vcpus-per-gpu N instead, or add it to a copy of the table (--prices FILE)")
    listed = table["usd_per_hour"].get(billed_as or name)
    price = Price(listed, f"{billed_as or name}, {table['label']}") if listed is not None else None
    entry = facts[name]
    return Instance(name, int(entry["vcpus"]), int(entry["gpus"]), entry.get("gpu"), price)


def engine_prices(engines: list[str], option: str | None, instance: str | None, table_path: str = DEFAULT_TABLE) -> dict[str, Price]:
    """The price of each engine that has one: ``option`` (ENGINE=USD,...) over the ``instance``'s table entry."""
    prices = _from_table(engines, instance, table_path) if instance else {}
    for engine, usd in parse_price_option(option, engines).items():
        prices[engine] = Price(usd, "--price-per-hour")
    return prices


def parse_price_option(text: str | None, engines: list[str]) -> dict[str, float]:
    """``ray=1.2,spark=0.9`` -> {"ray": 1.2, "spark": 0.9}; names must be engines being compared."""
    prices: dict[str, float] = {}
    for item in filter(None, (text or "").split(",")):
        engine, _, usd = item.partition("=")
        try:
            value = float(usd)
        except ValueError as e:
            raise JobError(f"--price-per-hour: expected ENGINE=USD such as ray=1.006, got {item!r}") from e
        if engine not in engines:
            raise JobError(f"--price-per-hour: {engine!r} is not one of the engines compared ({', '.join(engines)})")
        if value <= 0:
            raise JobError(f"--price-per-hour: {engine} must cost more than 0 per hour, got {usd}")
        prices[engine] = value
    return prices


def dollars_per_million_images(price: Price | None, images_per_sec: float | None) -> float | None:
    if price is None or not images_per_sec:
        return None
    return round(price.usd_per_hour / (images_per_sec * SECONDS_PER_HOUR) * 1e6, 2)


def _from_table(engines: list[str], instance: str, table_path: str) -> dict[str, Price]:
    table = _load_table(table_path)
    known = table["usd_per_hour"]
    if instance not in known:
        raise JobError(f"--instance {instance}: not in {table_path} (it lists {', '.join(sorted(known))}); "
                       "pass --price-per-hour ENGINE=USD instead")
    prices = {}
    for engine in engines:
        name = f"ml.{instance}" if engine == "sagemaker" else instance
        if name in known:
            prices[engine] = Price(known[name], f"{name}, {table['label']}")
    return prices


def _load_table(path: str) -> dict:
    try:
        with open(path) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        raise JobError(f"cannot read the price table {path} ({e}); pass --prices FILE or --price-per-hour ENGINE=USD") from e
    if not isinstance(table, dict) or not isinstance(table.get("usd_per_hour"), dict) or "label" not in table:
        raise JobError(f"{path}: expected {{\"label\": ..., \"usd_per_hour\": {{INSTANCE: USD}}}} as in job/costs/prices.json")
    return table
