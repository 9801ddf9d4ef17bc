"""python -m runners.compare: every engine on the same data, model, batch size and precision.

- ``command``: the command (runs each engine's job, the model alone, parity; writes the report).
- ``parity``: do several engines' outputs agree row by row.
- prices: dollars per hour per engine, from ``job.costs.prices`` (``prices.json``, shipped with the package).
- ``report``: results.json, results.md and chart.png.

Nothing is imported here: ``python -m runners.compare`` imports this package before
``__main__``, which first checks the [compare] extra (matplotlib) is installed.
"""


def __getattr__(name: str) -> object:
    """``runners.compare.main`` and ``Comparison``, imported from ``command`` when first asked for."""
    if name in ("Comparison", "main"):
        from runners.compare import command

        return getattr(command, name)
    raise AttributeError(f"module 'runners.compare' has no attribute {name!r}")
