"""The shipped rates table (``rates.json`` beside this module): figures this project measured, each with its date,
hardware, software, source and command.

Use ``gpu_rates`` for what one GPU of a kind does with its vCPUs, for an engine and a model: the model alone on that
GPU (its ceiling), and the CPU side per vCPU, taken from the engine's whole job on that GPU when one ran (its steady
rate over its vCPUs: those runs were CPU-bound), else from the decode stage on that machine's CPU plus the engine's
own CPU per image. A GPU, model or precision the table does not list is not measured: None, and the caller says so.
``figures`` lists the table for a person (``runners.capacity --rates-table``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from job.costs.rates import Rate, UnitRates
from job.errors import JobError

DEFAULT_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rates.json")  # package data: installed with it
WHATS = ("model", "job", "decode", "overhead")
REQUIRED = ("what", "label", "date", "hardware", "software", "source", "command")


def figures(path: str = DEFAULT_TABLE) -> list[dict]:
    """Every figure of the table, checked: each names what it measured, when, on what, and its source."""
    try:
        with open(path) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        raise JobError(f"cannot read the rates table {path} ({e}); pass --rates FILE with a table shaped as "
                       "job/costs/rates.json") from e
    rows = table.get("figures") if isinstance(table, dict) else None
    if not isinstance(rows, list):
        raise JobError(f"{path}: expected {{\"figures\": [...]}} as in job/costs/rates.json")
    for row in rows:
        missing = [key for key in REQUIRED if not row.get(key)]
        if missing or row["what"] not in WHATS:
            raise JobError(f"{path}: a figure without {', '.join(missing) or 'a known what'} ({row}); every figure "
                           f"names {', '.join(REQUIRED)}, what being one of {', '.join(WHATS)}")
    return rows


def citation(row: Mapping) -> str:
    """``shipped rates: ResNet50 eager bf16 batch 256 alone on one H100, 2026-11-26 (BENCHMARKS.md, GPU: one H100)``."""
    return f"shipped rates: {row['label']}, {row['date']} ({row['source']})"


def gpu_rates(gpu: str, engine: str, model: str, crop: int, precision: str, path: str = DEFAULT_TABLE) -> UnitRates | None:
    """What one ``gpu`` and its vCPUs do for ``engine`` running ``model`` at ``crop`` px and ``precision``: the model
    alone on it, the CPU side per vCPU, the start-up; None: the table has no such model figure (not measured)."""
    rows = figures(path)
    same = {"model": model, "crop": crop, "precision": precision}
    alone = _find(rows, "model", gpu, same)
    if alone is None:
        return None
    model_rate = Rate(alone["images_per_sec"], 0.0, citation(alone), "shipped")
    job = _find(rows, "job", gpu, {**same, "engine": engine})
    if job is None or not job.get("steady_images_per_sec"):
        return UnitRates(alone["device"], model_rate, _stage_cpu_rate(rows, gpu, engine, path), 0.0,
                         f"{engine}'s start-up with {gpu} GPUs: not measured (counted as 0)")
    steady = job["steady_images_per_sec"]
    cpu_rate = Rate(steady / job["vcpus"], 0.0, f"{citation(job)}: {steady:,.0f} images/s steady over {job['vcpus']} vCPU",
                    "shipped")
    return UnitRates(alone["device"], model_rate, cpu_rate, job["startup_seconds"], citation(job), None, job["vcpus"])


def _stage_cpu_rate(rows: list[dict], gpu: str, engine: str, path: str) -> Rate:
    """No whole job of ``engine`` on this GPU: the decode stage per core on that machine's CPU, with the engine's
    own CPU per image where measured; start-up not measured (0, said)."""
    decode = next((r for r in rows if r["what"] == "decode" and _names(gpu, r.get("box"))), None)
    if decode is None:
        raise JobError(f"the rates table has a model figure for {gpu} but no decode figure for its machine's CPU: "
                       "add one (what: decode, box: the GPU kind)")
    overhead = engine_overhead(engine, path)
    seconds = 1 / decode["images_per_sec_per_core"] + (overhead[0] if overhead else 0.0)
    added = f" + {overhead[1]}" if overhead else f"; {engine}'s own CPU per image not measured"
    return Rate(1 / seconds, 0.0, f"{citation(decode)}{added}; {engine}'s whole job with {gpu} GPUs: not measured", "shipped")


def _find(rows: list[dict], what: str, gpu: str, same: Mapping) -> dict | None:
    return next((r for r in rows if r["what"] == what and _names(gpu, r.get("device"))
                 and all(r.get(k) == v for k, v in same.items())), None)


def _names(kind: str, device: str | None) -> bool:
    """Whether ``device`` (a GPU's full name, "NVIDIA H100 80GB HBM3") is of ``kind`` ("H100"), either way round."""
    if not device or not kind or device == "cpu":
        return False
    kind, device = kind.upper(), device.upper()
    return kind in device or device in kind


def table_lines(path: str = DEFAULT_TABLE) -> list[str]:
    """The table, one line a figure, for a person: what, the figure, where, when, the source."""
    lines = []
    for row in figures(path):
        figure = (f"{row['images_per_sec']:,} images/s" if row["what"] == "model" else
                  f"{row.get('steady_images_per_sec') or row['images_per_sec']:,} images/s"
                  f"{' steady' if row.get('steady_images_per_sec') else ' whole job'}" if row["what"] == "job" else
                  f"{row['images_per_sec_per_core']:,} images/s a core" if row["what"] == "decode" else
                  f"{row['ms_per_image']} ms an image")
        lines.append(f"{row['what']:8} {figure}: {row['label']} ({row['hardware']}; {row['software']}), {row['date']}, "
                     f"{row['source']}: {row['command']}")
    return lines


def engine_overhead(engine: str, path: str = DEFAULT_TABLE) -> tuple[float, str] | None:
    """(seconds of CPU an image, its citation): ``engine``'s own work per image beyond decode + resize; None: not
    measured for it."""
    row = next((r for r in figures(path) if r["what"] == "overhead" and r.get("engine") == engine), None)
    return (row["ms_per_image"] / 1000, citation(row)) if row is not None else None
