"""compare's chart draws what the engines measured: a figure they could not give is "n/a", never a bar of 0."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="compare's chart needs matplotlib: pip install -e '.[compare]'")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from runners.compare.report import _bars_or_na  # noqa: E402


def test_a_missing_figure_is_written_n_a_not_drawn_as_zero():
    figure = Figure()
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    _bars_or_na(axes, [0, 1, 2], [12.5, None, 3.0], 0.4, color="#55A868", label="steady state")
    heights = [bar.get_height() for bar in axes.patches]
    assert heights == [12.5, 3.0]  # two bars, none for the engine without a steady rate
    assert [t.get_text() for t in axes.texts if t.get_text() == "n/a"] == ["n/a"]
    assert axes.texts[-1].get_position() == (1, 0)
