"""python -m runners.compare: every engine on the same data, model, batch size and precision.

- ``command``: the command (runs each engine's job, the model alone, parity; writes the report).
- ``parity``: do several engines' outputs agree row by row.
- ``prices``: dollars per hour per engine (``prices.json``, shipped with the package).
- ``report``: results.json, results.md and chart.png.
"""

from runners.compare.command import Comparison, main

__all__ = ["Comparison", "main"]
