"""A command whose pip extra is missing says so in one line naming the `pip install` that fixes it.

Each command runs as a user runs it (``python -m ...``, or the installed script's entry point)
in a child Python where the extra's modules cannot be imported (tests/common/hidden_modules).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.common.extras import skip_unless_first_missing, skip_without

REPO = Path(__file__).resolve().parents[2]
HIDING = REPO / "tests" / "common" / "hidden_modules"


def run_hiding(hidden: str, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HIDE_MODULES": hidden, "PYTHONPATH": os.pathsep.join([str(HIDING), str(REPO)])}
    return subprocess.run([sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def assert_one_line(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("error: ") and all(w in result.stderr for w in words), result.stderr


@pytest.mark.parametrize("command, hidden, extra", [
    ("runners.ray_job", "ray", "ray"),
    ("runners.spark_job", "pyspark", "spark"),
    ("runners.sagemaker_job", "sagemaker_pytorch_serving_container", "sagemaker"),
    ("runners.compare", "matplotlib", "compare"),
])
def test_python_m_without_its_extra_is_one_line_naming_the_install(command, hidden, extra):
    skip_unless_first_missing(extra, hidden)
    assert_one_line(run_hiding(hidden, "-m", command, "--help"), f"no module named {hidden!r}", f"pip install -e '.[{extra}]'")


def test_an_installed_script_without_its_extra_is_one_line_too():
    result = run_hiding("pyspark", "-c", "import sys, runners; sys.exit(runners.spark_cli())", "--help")
    assert_one_line(result, "pip install -e '.[spark]'")


def test_compare_refuses_an_engine_whose_extra_is_missing_before_running_any():
    skip_without("compare")  # compare's own extra comes first: without it, the line names that one
    result = run_hiding("pyspark", "-m", "runners.compare", "--engines", "local,spark", "--weights", "random")
    assert_one_line(result, "--engines spark", "pip install -e '.[spark]'")


def test_a_python_without_the_project_says_to_activate_the_virtualenv():
    """``python -m runners...`` with the system's Python, the virtualenv not activated."""
    assert_one_line(run_hiding("PIL", "-m", "runners.local_job", "--help"), "no module named 'PIL'", "source .venv/bin/activate")


def test_with_the_extra_installed_nothing_is_in_the_way():
    skip_without("spark")
    result = run_hiding("", "-m", "runners.spark_job", "--help")
    assert result.returncode == 0 and "--udf" in result.stdout, result.stderr


@pytest.mark.parametrize("table_format, hidden", [("delta", "deltalake"), ("iceberg", "pyiceberg")])
def test_a_table_format_without_its_extra_is_one_line_before_any_work(table_format, hidden):
    result = run_hiding(hidden, "-m", "runners.local_job", "--table-format", table_format, "--workers", "0")
    assert_one_line(result, f"--table-format {table_format} needs the {hidden} package", f"pip install -e '.[{table_format}]'")
