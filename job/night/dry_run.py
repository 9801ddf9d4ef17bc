"""``--dry-run``: the night's plan, printed before the lease, any write or any engine; ``--dry-run json``: as one object.

The plan is the one the night would make (``job.night.planning.plan_night``, on the devices the table's last night
ran on, or this machine's), read as what it does to each input unit: kept, scored as new, re-scored as changed or for
a rollout, dropped, withheld by a DELETE... counted in files and images, by the model that makes (or made) the rows.
The images it announces to score are the images the night's engine then runs (``NightPlan.pending``), exactly. Beside
them, the night's estimated time (and cost, where a price is known), each figure with the source of its rate
(``job.costs``). The refusals the night would meet are met here the same way: one line, exit 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from job.night.decision import (ADOPT, CHANGED, DROP, KEEP, KEEP_REMOVED, LOST, MISSING, NEW, OVERWRITE, RESCORE,
                                ROLLOUT, SCORE, TIMED_OUT, WITHHELD, Decision)
from job.night.options import model_label
from job.night.plan import NightPlan

# Each decision's (action, reason) in the dry run's words: what the night does with the unit.
ACTIONS = {
    (KEEP, None): "keep", (ADOPT, None): "adopt a stopped night's part",
    (SCORE, NEW): "score new", (SCORE, CHANGED): "re-score changed", (RESCORE, ROLLOUT): "re-score for a rollout",
    (RESCORE, TIMED_OUT): "re-score rows that timed out", (SCORE, MISSING): "score again: its part is gone",
    (SCORE, LOST): "score again: a lost manifest's rows", (SCORE, OVERWRITE): "score (--overwrite)",
    (DROP, None): "drop", (WITHHELD, None): "withheld by a DELETE", (KEEP_REMOVED, None): "keep removed",
}


@dataclass(frozen=True)
class Estimate:
    """The night's estimated time and cost, each with where its figure came from."""

    seconds: float  # start-up and the images to score, at the rate; 0: no engine starts
    images_per_sec: float | None  # the rate (None: nothing to score)
    startup_seconds: float
    rate_source: str  # where the rate came from, in words (a table's nights, a calibration, the shipped rates)
    dollars: float | None = None  # None: no price known
    price_source: str | None = None


def action_of(decision: Decision) -> str:
    """The dry run's word for what the night does with the unit."""
    return ACTIONS.get((decision.action, decision.reason)) or ACTIONS[(decision.action, None)]


def report(night: NightPlan, estimate: Estimate, devices: str, engine: str) -> dict:
    """The dry run as one record: the counts by action and model, the units the night changes, the estimate."""
    labels = {key: model_label(night.options if key == night.target else night.models.options_of(key))
              for key in {d.model for d in night.decisions}}
    actions: dict[str, dict] = {}
    changes = []
    for d in night.decisions:
        rows = d.file.rows if d.file is not None else (d.entry.rows if d.entry is not None else 0)
        entry = actions.setdefault(action_of(d), {"files": 0, "images": 0, "by_model": {}})
        by_model = entry["by_model"].setdefault(labels[d.model], {"files": 0, "images": 0})
        for counts in (entry, by_model):
            counts["files"], counts["images"] = counts["files"] + 1, counts["images"] + rows
        if d.action != KEEP:
            changes.append({"unit": d.unit, "action": action_of(d), "images": rows, "model": labels[d.model]})
    pending = night.pending
    return {"output": night.output.uri, "input": night.input.location.uri, "engine": engine, "devices": devices,
            "files_to_score": len(pending.files), "images_to_score": pending.rows, "starts_engine": bool(pending.files),
            "estimated_seconds": round(estimate.seconds, 1), "rate_source": estimate.rate_source,
            "images_per_sec": estimate.images_per_sec, "startup_seconds": estimate.startup_seconds,
            "estimated_dollars": estimate.dollars, "price_source": estimate.price_source,
            "model": labels[night.target], "actions": actions, "changes": changes, "notes": list(night.notes)}


def print_report(record: Mapping, as_json: bool, stream: TextIO | None = None) -> None:
    """The dry run for a person (or, ``as_json``, one JSON object)."""
    stream = stream or sys.stdout
    if as_json:
        print(json.dumps(record, indent=2), file=stream)
        return
    print(f"dry run: {record['output']} ({record['engine']}, {record['devices']}): nothing was written", file=stream)
    for action, counts in record["actions"].items():
        models = "; ".join(f"{m['files']} on {name}" for name, m in counts["by_model"].items())
        print(f"  {action}: {counts['files']} {_plural(counts['files'], 'file')}, {counts['images']} images ({models})",
              file=stream)
    seconds, rate = record["estimated_seconds"], record["images_per_sec"]
    if not record["starts_engine"]:
        print("  nothing to score: no engine starts", file=stream)
    else:
        pace = f" at {rate:,.1f} images/s after {record['startup_seconds']:.0f} s of start-up" if rate else ""
        dollars = record["estimated_dollars"]
        cost = "" if dollars is None else (f", about ${dollars:,.2f}" if dollars >= 0.01 else ", under $0.01")
        cost += f" ({record['price_source']})" if cost else ""
        print(f"  to score: {record['images_to_score']} images in {record['files_to_score']} "
              f"{_plural(record['files_to_score'], 'file')}: about {seconds:,.0f} s{pace}{cost}; rate: "
              f"{record['rate_source']}", file=stream)
    for note in record["notes"]:
        print(f"  note: {note}", file=stream)


def _plural(number: int, noun: str) -> str:
    return noun if number == 1 else noun + "s"

