"""Measured rates and what they cost: used by ``runners.capacity``, ``runners.history`` and the night's estimates.

Every estimate here comes from a measured rate that says where it came from (``rates.Rate``): this table's own
nights (``history``), a calibration on this machine (``calibration``), or the shipped rates table
(``shipped``, figures from BENCHMARKS.md with their date, hardware and command). Hardware no figure covers is
"not measured", never a guess.

- ``rates``: ``Rate`` and ``table_rate`` (the rate of a table's recent nights).
- ``history``: ``read_nights``, one typed record per ``_history/*.json``; ``reasons``: the images a night scored, by why.
- ``shipped`` (+ ``rates.json``): the shipped rates; ``calibration``: measuring this machine, and the record it keeps.
- ``prices`` (+ ``prices.json``): list prices and instance facts (vCPUs, GPUs) per instance type.
- ``sizing``: a unit's rate (a GPU and its vCPUs, or a CPU-only machine), N images' time, the units a deadline needs;
  ``layout``: those units as each engine's instances, and their dollars; ``choose``: which rates answer a question;
  ``answer``: the question answered, as lines and JSON; ``deploy_files``: the deploy configs with the counts chosen.
- ``chart``: the nights drawn as a PNG; ``mlflow_run``: a night logged as an MLflow run.
"""
