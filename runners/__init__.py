"""The engines and the commands, thin adapters over the engine-neutral ``job`` core.

- ``ray_job`` (+ ``ray_cluster``, ``ray_blocks``, ``ray_placement``): Ray Data actor pools.
- ``spark_job`` (+ ``spark/``: the session; ``spark_udfs``: what executors run): Spark's Arrow and pandas UDFs.
- ``sagemaker_job`` (+ ``sagemaker/``): SageMaker Batch Transform, or ``--local``.
- ``local_job``: plain PyTorch DataLoader, the baseline.
- ``engines``: the table of the four; ``compare/`` runs them all and checks parity.
- ``make_dataset``: writes Parquet image datasets.
Only modules here import ray, pyspark, boto3 or sagemaker.
"""
