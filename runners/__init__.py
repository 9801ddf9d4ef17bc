"""Engine adapters over the shared core. One module per engine, plus the shared job contract.

- ``job``: ``JobConfig`` and the argument parser every runner shares.
- ``source`` / ``output`` / ``commit``: reading input files, the output schema, committing
  output and the ``_SUCCESS.json`` manifest; engine-neutral, so every engine behaves alike.
- ``ray_job``: ``python -m runners.ray_job``.
- ``make_dataset``: ``python -m runners.make_dataset``.
"""
