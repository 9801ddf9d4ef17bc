"""README's `ray job submit` command against a real local head with its dashboard, token auth on both sides.

The head starts as docs/DEPLOY.md starts one (`RAY_AUTH_MODE=token`, the token in the environment:
`RAY_AUTH_TOKEN`, or the file ~/.ray/auth_token); the client sends the same token. The job runs
through Ray's job API, joins the cluster through the RAY_ADDRESS the job supervisor sets, and writes
its table. Slow (about a minute on 2 cores): -m slow.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from benchmarks.harness.ray_cluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_readme_ray_job_submit_runs_the_job_on_the_cluster(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"), rows_per_file=9)
    with LocalCluster(head_cpus=2, dashboard=True) as cluster:
        # The README's command, with this cluster's dashboard for http://head:8265.
        command = ["ray", "job", "submit", "--address", cluster.dashboard_url, "--working-dir", ".", "--",
                   "python", "-m", "runners.ray_job", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                   "--weights", "random", "--batch-size", "8"]
        env = {key: value for key, value in cluster.env.items() if key not in ("RAY_ADDRESS", "PYTHONPATH")}
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        # Without the token the job API refuses the client: the cluster is not open to whoever reaches it.
        env_without = {**env, "RAY_AUTH_TOKEN": "not-the-token"}
        refused = subprocess.run(["ray", "job", "list", "--address", cluster.dashboard_url], cwd=REPO, env=env_without,
                                 capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0
    logs = done.stdout + done.stderr
    assert f"ray: joined the Ray cluster at " in logs and f":{cluster.port} (1 node, 2 CPUs, 0 GPUs)" in logs, logs[-4000:]
    assert "succeeded" in logs
    rows, manifest = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
