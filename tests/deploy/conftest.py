"""Fixtures of the deployment checks: parsed terraform and one checkov run per session.

Everything here runs offline. A tool that is not installed fails the test that needs it,
naming the install command, except the terraform binary (see test_terraform.py).
"""

import json
import subprocess

import pytest

from deploy_helpers import REPO, TERRAFORM, checkov_executable, parse_hcl_dir


@pytest.fixture(scope="session")
def tf() -> dict:
    return parse_hcl_dir(TERRAFORM)


@pytest.fixture(scope="session")
def tf_bucket_module() -> dict:
    return parse_hcl_dir(TERRAFORM / "modules" / "s3_bucket")


@pytest.fixture(scope="session")
def checkov_report() -> dict:
    """One offline checkov scan of terraform/ per session: it is the slow check (~10 s)."""
    command = [checkov_executable(), "-d", "terraform", "--framework", "terraform",
               "--skip-download", "--output", "json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"checkov printed no JSON (exit {done.returncode}):\n{done.stderr[-3000:]}")
    report = report[0] if isinstance(report, list) else report
    report["returncode"] = done.returncode
    return report
