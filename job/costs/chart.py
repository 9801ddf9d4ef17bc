"""A table's nights drawn as one PNG: the images each night scored (by why), its rate, and the rollout's share by model.

Use ``draw_nights`` (``runners.history --plot``). Three panels over the same nights, oldest on the left: stacked bars
of the images scored, by reason (``job.costs.reasons``); the steady images/s, and the whole run's where the night was
too small for a steady figure (hollow); the table's rows by the model that made them after each night (a rollout's
progress; one colour a model). Drawn with matplotlib's Agg canvas: no display, no pyplot state. A stopped run has no
figures and is left out. matplotlib comes with the [compare] extra.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from job.costs.history import Night
from job.costs.reasons import REASONS

REASON_COLOURS = dict(zip(REASONS, ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2", "#937860", "#8C8C8C")))
OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 8, "title_fontsize": 8}  # beside the panel
MODEL_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2", "#937860", "#DA8BC3", "#8C8C8C")


def draw_nights(nights: Sequence[Night], path: str, title: str) -> str:
    """Draw the finished ``nights`` into ``path`` (PNG); returns the path."""
    shown = [n for n in nights if n.finished]
    figure = Figure(figsize=(max(9.0, 0.6 * len(shown) + 5), 9), layout="constrained")
    FigureCanvasAgg(figure)
    scored, rate, models = figure.subplots(3, 1, sharex=True)
    positions = list(range(len(shown)))
    _scored(scored, shown, positions)
    _rate(rate, shown, positions)
    _models(models, shown, positions)
    models.set_xticks(positions, [_when(n) for n in shown], fontsize=8)
    models.set_xlabel("night: its number in the table, its start (UTC)", fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.savefig(path, dpi=110)
    return path


def _scored(axes: object, nights: Sequence[Night], positions: list[int]) -> None:
    bottom = [0] * len(nights)
    for reason in REASONS:
        heights = [n.by_reason.get(reason, 0) for n in nights]
        if any(heights):
            axes.bar(positions, heights, 0.7, bottom=bottom, color=REASON_COLOURS[reason], label=reason)
            bottom = [b + h for b, h in zip(bottom, heights)]
    for p, total in zip(positions, bottom):
        axes.text(p, total, f"{total:,}", ha="center", va="bottom", fontsize=8)
    axes.set_ylim(0, max(bottom + [1]) * 1.2)  # room for the totals
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("images")
    axes.set_title("images scored a night, by why", fontsize=9, loc="left")
    axes.legend(**OUTSIDE, title="why")


def _rate(axes: object, nights: Sequence[Night], positions: list[int]) -> None:
    steady = [(p, n.steady_images_per_sec) for p, n in zip(positions, nights) if n.steady_images_per_sec]
    whole = [(p, n.images_per_sec) for p, n in zip(positions, nights) if not n.steady_images_per_sec and n.images_per_sec]
    if steady:
        axes.plot(*zip(*steady), "o-", color="#4C72B0", label="steady images/s")
    if whole:
        axes.plot(*zip(*whole), "o", markerfacecolor="none", color="#C44E52", label="whole run\n(too few batches\nfor steady)")
    for p, value in steady + whole:
        axes.annotate(f"{value:,.1f}", (p, value), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    top = max([v for _, v in steady + whole] + [1])
    axes.set_ylim(0, top * 1.3)
    axes.set_ylabel("images/s")
    axes.set_title("the night's rate", fontsize=9, loc="left")
    if steady or whole:
        axes.legend(**OUTSIDE, title="rate")


def _models(axes: object, nights: Sequence[Night], positions: list[int]) -> None:
    shares = [_rows_by_model(n) for n in nights]
    names = list(dict.fromkeys(name for share in shares for name in share))
    bottom = [0.0] * len(nights)
    for number, name in enumerate(names):
        heights = [100 * share.get(name, 0) / max(sum(share.values()), 1) for share in shares]
        axes.bar(positions, heights, 0.7, bottom=bottom, color=MODEL_COLOURS[number % len(MODEL_COLOURS)], label=name)
        bottom = [b + h for b, h in zip(bottom, heights)]
    axes.set_ylim(0, 100)
    axes.set_ylabel("% of rows")
    axes.set_title("the table's rows after the night, by the model that made them (a rollout's progress)", fontsize=9,
                   loc="left")
    axes.legend(**OUTSIDE, title="model")


def _rows_by_model(night: Night) -> dict[str, int]:
    """The table's rows by model after ``night``: its rollout record, else all on the night's model."""
    if night.rollout:
        return {name: entry["images"] for name, entry in night.rollout["models"].items()}
    return {night.model or "unknown": night.rows or 0}


def _when(night: Night) -> str:
    """``#3`` (the run's number in the table) over its UTC start, ``12-07 03:39``."""
    number = f"#{night.number}\n" if night.number else ""
    return number + (f"{night.at:%m-%d}\n{night.at:%H:%M}" if night.at else night.run_id[:12])
