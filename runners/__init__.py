"""Engine adapters over the shared core. One module per engine, plus the shared job contract.

- ``job``: ``JobConfig`` and the argument parser every runner shares.
- ``source`` / ``output`` / ``commit`` / ``parts`` / ``resume``: reading input files, the
  output schema, one atomically committed part per input file and the ``_SUCCESS.json``
  manifest, gathering rows into parts, and what an existing output prefix means
  (``--resume``); engine-neutral, so every engine behaves alike.
- ``ray_job``: ``python -m runners.ray_job``.
- ``make_dataset``: ``python -m runners.make_dataset``.
"""
