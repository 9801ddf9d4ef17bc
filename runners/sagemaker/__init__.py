"""SageMaker Batch Transform for the shared job: on AWS, and on this machine (``--local``).

One concept per module: ``options`` (the engine's CLI options and their limits), ``container``
(the one serving image and its variables), ``shard`` (planned input -> Parquet shards under the
payload cap), ``wheels`` (what the image lacks, for its Python), ``package`` (model.tar.gz),
``serving`` (the container's handler), ``toolkit`` (the real SageMaker inference toolkit, run
here), ``server`` (a loopback stand-in for the container), ``local_transform`` (what Batch
Transform does, done here), ``aws`` (the real service, through the SageMaker SDK) and
``assemble`` (``.out`` objects -> one part per input file). ``runners.sagemaker_job`` wires them.
"""
