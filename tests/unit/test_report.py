"""The versions a manifest records, also for a package installed without pip's metadata."""

from __future__ import annotations

import subprocess
import sys

import importlib.metadata

from job.report import versions


def test_a_package_without_pip_metadata_reports_its_modules_version(tmp_path, monkeypatch):
    # As Databricks ships pyspark: the module on sys.path, no *.dist-info beside it.
    (tmp_path / "bare_engine").mkdir()
    (tmp_path / "bare_engine" / "__init__.py").write_text('__version__ = "3.5.2"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    found = versions("bare_engine", "no_such_engine", "pyarrow")
    assert found["bare_engine"] == "3.5.2"
    assert found["no_such_engine"] == "not installed"
    assert found["pyarrow"] == importlib.metadata.version("pyarrow")  # pip's metadata first


def test_the_hardware_is_told_without_loading_torch():
    """Ray's and Spark's drivers never load torch; naming the GPUs must not load it for them."""
    code = "import sys; from job import report; facts = report.hardware(); assert 'torch' not in sys.modules; print(facts['cpu_count'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout) >= 1, done.stderr
