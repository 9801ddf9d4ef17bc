"""The engines and the commands, thin adapters over the engine-neutral ``job`` core.

- ``ray_job`` (+ ``ray/``: the session, the block codec, the decode feedback, placement): Ray Data actor pools.
- ``spark_job`` (+ ``spark/``: the session, what executors run, the read-ahead thread): Spark's Arrow and pandas UDFs.
- ``sagemaker_job`` (+ ``sagemaker/``: options, the archive, serving, AWS, --local): SageMaker Batch Transform.
- ``local_job``: plain PyTorch DataLoader, the baseline.
- ``compare/``: runs the engines one after another and checks parity; ``make_dataset``: writes Parquet image datasets.
- ``capacity``: the time, GPUs and dollars N images take, or need by a deadline; ``history``: a table's nights, one line
  each and on a chart (both over ``job.costs``).
Only modules here import ray, pyspark, boto3 or sagemaker.

``ENGINES`` is the one table of engines, by name: each module exports its ``job.engine.Engine``
record as ``ENGINE``. A new engine is one module and one line here; compare and the benchmarks
read this table. ``EXTRAS`` says what each pip extra provides: a command whose extra is missing
says so in one line (``require_extra``) before its first import of it would fail.
"""

from __future__ import annotations

import sys

if sys.argv[:1] == ["-m"]:  # a command starting (as below): Ctrl-C during its imports is one line, exit 130
    from job.errors import exit_quietly_on_ctrl_c

    exit_quietly_on_ctrl_c()

import importlib  # noqa: E402
import importlib.util  # noqa: E402
from typing import TYPE_CHECKING, NamedTuple

# What every command imports (the project's own dependencies). Under `python -m runners.<command>`
# (sys.argv[0] is "-m" while Python imports this package) a Python without them is usually the
# system's, the virtualenv not activated: one line says so instead of a traceback.
CORE_MODULES = ("numpy", "pyarrow", "PIL", "torch")
_missing_core = next((m for m in CORE_MODULES if importlib.util.find_spec(m) is None), None)
if _missing_core is not None and sys.argv[:1] == ["-m"]:
    print(f"error: this Python ({sys.executable}) has no module named {_missing_core!r}, so the project is not installed "
          "for it: activate its virtualenv (`source .venv/bin/activate`), or run `.venv/bin/python -m ...`", file=sys.stderr)
    sys.exit(2)  # job.cli's code for what the user can fix

# First of ours in every command: the clock of its start-up starts here (job.timeline).
from job.timeline import COMMAND_STARTED_AT  # noqa: E402, F401
from job.cli import EXIT_USAGE  # noqa: E402 - light: job.cli loads neither torch nor an engine
from job.errors import JobError  # noqa: E402

if TYPE_CHECKING:
    from job.engine import Engine


class EngineEntry(NamedTuple):
    module: str  # python -m <module> runs it; the module's ENGINE is its record
    extra: str | None  # the pip extra its engine needs, e.g. pip install -e '.[ray]'


ENGINES = {
    "ray": EngineEntry("runners.ray_job", "ray"),
    "spark": EngineEntry("runners.spark_job", "spark"),
    "sagemaker": EngineEntry("runners.sagemaker_job", "sagemaker"),
    "local": EngineEntry("runners.local_job", None),
}

# The modules each extra of pyproject.toml provides, as `import` names (Databricks' own pyspark has
# no pip metadata, so the check asks the import system, not pip). The compare extra installs every
# engine's too; compare checks those per --engines.
EXTRAS = {
    "ray": ("ray", "pandas"),  # ray[data] brings pandas, which ray.data imports
    "spark": ("pyspark", "pandas"),
    "sagemaker": ("boto3", "sagemaker", "sagemaker_inference", "sagemaker_pytorch_serving_container", "packaging"),
    "compare": ("matplotlib",),
}


class MissingExtra(JobError, ImportError):
    """A command's pip extra is not installed: one line naming the ``pip install`` that fixes it."""


def missing_extra(extra: str | None) -> MissingExtra | None:
    """The error for ``extra`` when one of its modules cannot be imported here, else None."""
    missing = next((m for m in EXTRAS.get(extra or "", ()) if importlib.util.find_spec(m) is None), None)
    if missing is None:
        return None
    return MissingExtra(f"no module named {missing!r} in this Python ({sys.executable}): it comes with the [{extra}] "
                        f"extra; install it with `pip install -e '.[{extra}]'`")


def require_extra(extra: str | None, importer: str) -> None:
    """Call at the top of a command module, before importing what ``extra`` provides.

    ``importer`` is the module's ``__name__``: run as ``python -m`` (``"__main__"``) a missing
    extra ends the command with one line and exit code 2; imported, it raises ``MissingExtra``
    (a ``JobError``: ``job.cli.run_main`` prints it as one line too).
    """
    error = missing_extra(extra)
    if error is None:
        return
    if importer == "__main__":
        print(f"error: {error}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    raise error


def engine(name: str) -> Engine:
    """The engine called ``name``, imported on demand (each module imports its engine: ray, pyspark...)."""
    return importlib.import_module(ENGINES[name].module).ENGINE


def _command(module: str) -> int:
    """An installed command (``sbi-ray``...): its module imported only now, so a missing extra is one line."""
    try:
        command = importlib.import_module(module)
    except MissingExtra as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    return command.cli()


# The entry points of pyproject.toml's [project.scripts]: the same as `python -m runners.<module>`.
def ray_cli() -> int:
    return _command("runners.ray_job")


def spark_cli() -> int:
    return _command("runners.spark_job")


def sagemaker_cli() -> int:
    return _command("runners.sagemaker_job")


def local_cli() -> int:
    return _command("runners.local_job")


def compare_cli() -> int:
    return _command("runners.compare.command")


def make_dataset_cli() -> int:
    return _command("runners.make_dataset")


def capacity_cli() -> int:
    return _command("runners.capacity")


def history_cli() -> int:
    return _command("runners.history")
