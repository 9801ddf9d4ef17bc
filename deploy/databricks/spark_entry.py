"""Databricks entry point: runs `python -m runners.spark_job` with the task's parameters.

A spark_python_task runs a file, not a module, so this shim hands over to the module that
the project wheel (installed as a job library) provides. Used by both
deploy/databricks/databricks.yml and terraform/databricks.tf.
"""

import runpy

if __name__ == "__main__":
    # alter_sys keeps the task parameters in sys.argv[1:], exactly as `python -m` would.
    runpy.run_module("runners.spark_job", run_name="__main__", alter_sys=True)
