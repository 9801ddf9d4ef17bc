"""The import arrows run one way: commands -> engines -> job core -> inference / preprocess / storage.

Read from the source (every import statement, also inside functions), so a new module is
held to it the day it is written; and in a fresh process for what a CPU worker loads.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

from tests.common.extras import skip_without

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENGINES = {"ray", "pyspark", "boto3", "botocore.client", "sagemaker"}
# Each core package and the packages of ours it may import.
LAYERS = {
    "storage": {"storage"},
    "preprocess": {"preprocess"},
    "inference": {"inference", "preprocess", "storage"},
    "job": {"job", "inference", "preprocess", "storage"},
}
OURS = {"storage", "preprocess", "inference", "job", "runners", "tests", "benchmarks"}


def imported_modules(path: pathlib.Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_the_core_imports_no_engine_and_nothing_above_it(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        for module in imported_modules(path):
            top = module.split(".")[0]
            assert not any(module == e or module.startswith(e + ".") for e in ENGINES), f"{path}: imports {module}"
            assert top not in OURS or top in LAYERS[package], f"{path}: imports {module}, a layer above {package}"


def test_a_cpu_worker_loads_no_torch():
    """What a Ray decoder process imports to run ``RayPreprocess``: Pillow and numpy, never torch."""
    skip_without("ray")
    code = ("import sys, runners.ray_job, job.stages, preprocess; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# The commands (one module each: the engines' jobs, make_dataset, capacity, history; compare's package) and one package
# per engine's internals: what a command does beyond its arguments lives in the core, under job/.
TOOLS = {"make_dataset.py", "capacity.py", "history.py"}


def test_runners_holds_the_commands_and_one_package_per_engines_internals():
    entries = sorted(p.name for p in (ROOT / "runners").iterdir() if p.name not in ("__init__.py", "__pycache__"))
    assert len(entries) <= 11, entries
    assert not [name for name in entries if name.endswith(".py") and not name.endswith("_job.py") and name not in TOOLS]


def test_benchmarks_import_no_tests():
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        assert not [m for m in imported_modules(path) if m.split(".")[0] == "tests"], path


def test_an_engine_is_one_module_and_one_line_of_the_table():
    from runners import ENGINES, engine

    for entry in ENGINES.values():  # each record is read from its engine's module, which imports the engine
        if entry.extra is not None:
            skip_without(entry.extra)
    commands = {f"runners.{p.stem}" for p in (ROOT / "runners").glob("*_job.py")}
    assert commands == {entry.module for entry in ENGINES.values()}
    for name, entry in ENGINES.items():
        record = engine(name)
        assert (record.name, record.module) == (name, entry.module)
        assert record.args_parser().prog == f"python -m {entry.module}"
