"""Several models in one run (``--models``): each image read and decoded once, each model into its own table.

- ``entries``: the ``--models`` TOML file, each entry one model's ``JobConfig``;
- ``stages``: the stages' side: each image's pixels in every recipe the run's models take, every model in the one
  actor, each model's parts committed under its own table;
- ``run``: the driver's side: every table prepared, planned and finished as a single model's night is, one engine run.
"""
