"""What ``runners.compare`` writes: results.json, results.md (the printed table) and chart.png.

``run_row`` turns one engine's manifest into its results row; ``markdown`` renders the
tables; ``write_report`` writes all three files into the report directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from job.night.manifest import Manifest
from job.costs.prices import Price, dollars_per_million_images

RESULTS_JSON, RESULTS_MD, CHART_PNG = "results.json", "results.md", "chart.png"


def run_row(engine: str, manifest: Manifest | None, model_only: float | None, price: Price | None, failed: str | None = None,
            engine_args: list[str] | None = None) -> dict:
    """One engine's results row; ``manifest`` is None when the engine failed (``failed`` says how)."""
    ips = manifest.images_per_sec if manifest else None
    timeline = dataclasses.asdict(manifest.timeline) if manifest else {}
    return {
        "engine": engine,
        "images": manifest.counts.rows_out if manifest else None,
        "errors": manifest.counts.errored if manifest else None,
        "seconds": manifest.seconds if manifest else None,
        "images_per_sec": ips,
        "startup_seconds": timeline.get("startup_seconds"),
        "steady_images_per_sec": timeline.get("steady_images_per_sec"),
        "device_busy_fraction": timeline.get("device_busy_fraction"),
        "model_only_images_per_sec": model_only,
        "model_only_ratio": round(ips / model_only, 3) if ips and model_only else None,
        "price_per_hour": price.usd_per_hour if price else None,
        "price_source": price.source if price else None,
        "dollars_per_million_images": dollars_per_million_images(price, ips),
        "config": manifest.config if manifest else None,
        "execution": manifest.execution if manifest else None,  # how it computed, as its driver decided
        "hardware": manifest.hardware if manifest else None,
        "versions": manifest.versions if manifest else None,
        "settings": manifest.settings if manifest else {},  # the engine's own facts
        "engine_args": engine_args or [],  # --engine-args: options given to this engine only
        "output": manifest.output if manifest else None,
        "failed": failed,
    }


def markdown(results: dict) -> str:
    """The report as Markdown: engines table, parity, model-only line, preprocessing table."""
    parts = [_engines_table(results["runs"]), _engine_args_text(results["runs"]), _unpriced_text(results["runs"]),
             _parity_text(results["parity"]),
             _model_only_text(results["model_only"])]
    if results["preprocess"]:
        parts.append(_preprocess_table(results["preprocess"]))
    parts.append(f"Command: `{results['command']}`  \nHardware: {_hardware_text(results['hardware'])}")
    return "\n\n".join(p for p in parts if p) + "\n"


def write_report(directory: str, results: dict) -> list[str]:
    """Write results.json, results.md and (when engines ran) chart.png; returns their paths."""
    paths = [os.path.join(directory, RESULTS_JSON), os.path.join(directory, RESULTS_MD)]
    with open(paths[0], "w") as f:
        json.dump(results, f, indent=2, default=str)
    with open(paths[1], "w") as f:
        f.write(markdown(results))
    if any(r["images_per_sec"] for r in results["runs"]):
        paths.append(write_chart(os.path.join(directory, CHART_PNG), results))
    return paths


def write_chart(path: str, results: dict) -> str:
    """Images/sec by engine (whole job, and steady state) against the model-only ceiling; start-up beside it."""
    runs = [r for r in results["runs"] if r["images_per_sec"]]
    figure = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(figure)  # render with Agg: no display, no pyplot global state
    rates, startup = figure.subplots(1, 2, width_ratios=(2, 1))
    engines = [r["engine"] for r in runs]
    positions = range(len(runs))
    whole = rates.bar([p - 0.2 for p in positions], [r["images_per_sec"] for r in runs], 0.4, color="#4C72B0", label="whole job")
    rates.bar_label(whole, fmt="%.1f", fontsize=8)
    _bars_or_na(rates, [p + 0.2 for p in positions], [r.get("steady_images_per_sec") for r in runs], 0.4,
                color="#55A868", label="steady state")
    rates.set_xticks(list(positions), engines)
    top = max(max(r["images_per_sec"], r.get("steady_images_per_sec") or 0) for r in runs)
    model_only = results["model_only"]
    if model_only:
        rates.axhline(model_only["images_per_sec"], color="#C44E52", linestyle="--",
                      label=f"model only: {model_only['images_per_sec']:.1f} images/s")
        top = max(top, model_only["images_per_sec"])
    rates.legend(loc="best", fontsize=8)
    rates.set_ylim(0, top * 1.3)  # room for the bar labels and the legend
    rates.set_ylabel("images/sec")
    _bars_or_na(startup, list(positions), [r.get("startup_seconds") for r in runs], 0.8, color="#8172B2")
    startup.set_xticks(list(positions), engines)
    startup.set_ylabel("seconds from command to first prediction")
    figure.suptitle(f"ResNet50 {_setup_text(results)}, {runs[0]['images']} images, {_hardware_text(results['hardware'])}", fontsize=9)
    figure.savefig(path, dpi=120)
    return path


def _bars_or_na(axes: object, positions: list[float], values: list[float | None], width: float, **style: object) -> None:
    """Labelled bars for the values the engines measured; "n/a" written where one could not (never a bar of 0)."""
    measured = [(p, v) for p, v in zip(positions, values) if v is not None]
    if measured:
        bars = axes.bar([p for p, _ in measured], [v for _, v in measured], width, **style)
        axes.bar_label(bars, fmt="%.1f", fontsize=8)
    elif "label" in style:
        axes.bar([], [], width, **style)  # the legend still names the series
    for p, v in zip(positions, values):
        if v is None:
            axes.text(p, 0, "n/a", ha="center", va="bottom", fontsize=8, color=style.get("color"))


def _engines_table(runs: list[dict]) -> str:
    if not runs:
        return ""
    lines = ["| engine | images | errors | seconds | images/s | startup s | steady images/s | device busy "
             "| model-only images/s | of model-only | $/hour | $/M images |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if r["failed"]:
            why = r["failed"].replace("|", "\\|")  # the engine's own line may hold a table's separator
            lines.append(f"| {r['engine']} | failed: {why} | | | | | | | | | | |")
            continue
        ratio = f"{r['model_only_ratio']:.0%}" if r["model_only_ratio"] is not None else "-"
        busy = f"{r['device_busy_fraction']:.0%}" if r.get("device_busy_fraction") is not None else "-"
        lines.append(f"| {r['engine']} | {r['images']} | {r['errors']} | {r['seconds']:.1f} | {_num(r['images_per_sec'], '.1f')} | "
                     f"{_num(r.get('startup_seconds'), '.1f')} | {_num(r.get('steady_images_per_sec'), '.1f')} | {busy} | "
                     f"{_num(r['model_only_images_per_sec'], '.1f')} | {ratio} | {_num(r['price_per_hour'], '.3f')} | "
                     f"{_num(r['dollars_per_million_images'], ',.2f')} |")
    return "\n".join(lines)


def _engine_args_text(runs: list[dict]) -> str:
    tuned = [f"{r['engine']} `{shlex.join(r['engine_args'])}`" for r in runs if r.get("engine_args")]
    return f"Engine options (--engine-args): {'; '.join(tuned)}." if tuned else ""


def _unpriced_text(runs: list[dict]) -> str:
    unpriced = [r["engine"] for r in runs if r["price_per_hour"] is None]
    if not unpriced or len(unpriced) == len(runs):
        return ""
    return f"No price for {', '.join(unpriced)}: pass --price-per-hour ENGINE=USD (SageMaker bills ml.* instances at its own rate)."


def _parity_text(parity: dict | None) -> str:
    if parity is None:
        return ""
    if len(parity["engines"]) < 2:
        return f"Parity: not checked, fewer than two engines finished ({', '.join(parity['engines']) or 'none'})."
    if parity["ok"]:
        cosine, centred = parity.get("min_embedding_cosine"), parity.get("min_centred_cosine")
        embeddings = f", embeddings' cosine at least {cosine} ({centred} from their mean)" if cosine is not None else ""
        return (f"Parity: OK. {len(parity['engines'])} engines agree on all {parity['rows']} ids "
                f"(same ids, same top-1 label and name, same rows errored{embeddings}).")
    lines = [f"Parity: FAILED. {parity['mismatches']} of {parity['rows']} ids disagree; examples:", "",
             "| id | " + " | ".join(parity["engines"]) + " |", "|---|" + "---|" * len(parity["engines"])]
    lines += ["| " + " | ".join([str(e["id"]), *(str(e[n]) for n in parity["engines"])]) + " |" for e in parity["examples"]]
    return "\n".join(lines)


def _model_only_text(model_only: dict | None) -> str:
    if not model_only:
        return ""
    return (f"Model only: {model_only['images_per_sec']:.1f} images/s on {model_only['device']} "
            f"({model_only['precision']}, batch {model_only['batch_size']}, {model_only['batches']} batches in "
            f"{model_only['seconds']:.1f} s): the same model and predictor on a batch already on the device.")


def _preprocess_table(rows: list[dict]) -> str:
    lines = [f"Preprocessing per core: one thread, the same {rows[0]['images']} images of the input, best of {rows[0]['repeats']}.",
             "", "| method | images/s per core | ours is |", "|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['description']} | {r['images_per_sec_per_core']:.1f} | {r['ours_speedup']:.2f}x |")
    return "\n".join(lines)


def _setup_text(results: dict) -> str:
    model_only = results["model_only"] or {}
    return f"{model_only.get('precision', '')} batch {model_only.get('batch_size', '')}".strip()


def _hardware_text(hardware: dict) -> str:
    gpus = ", ".join(hardware.get("gpus") or []) or "no GPU"
    return f"{hardware.get('cpu_count')} x {hardware.get('cpu')}, {hardware.get('memory_gib')} GiB, {gpus}"


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
