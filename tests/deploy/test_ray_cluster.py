"""deploy/ray/: the cluster launcher YAML validates against Ray's own schema; submit.sh matches it."""

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import ray
from ray.autoscaler._private.command_runner import SSHCommandRunner
from ray.autoscaler._private.util import prepare_config, validate_config

from deploy_helpers import (CPU_ONLY_INSTANCE, DEPLOY, GPU_INSTANCE, REPO, load_yaml, module_command,
                            ray_submit_tokens, runner_args, tf_default)

RAY_SCHEMA = Path(ray.__file__).parent / "autoscaler" / "ray-schema.json"


@pytest.fixture(scope="module")
def cluster() -> dict:
    return load_yaml("deploy/ray/cluster.yaml")


def test_cluster_yaml_validates_against_rays_schema(cluster):
    jsonschema.validate(cluster, json.loads(RAY_SCHEMA.read_text()))


def test_cluster_yaml_passes_rays_own_config_checks(cluster):
    # prepare_config fills the AWS defaults; validate_config adds the cross-field rules
    # (head type is a node type, sum of min_workers <= max_workers).
    validate_config(prepare_config(cluster))


def test_cluster_is_heterogeneous(cluster):
    types = cluster["available_node_types"]
    head = types[cluster["head_node_type"]]
    assert head["resources"] == {"CPU": 0}, "no read or decode task on the head"
    cpu, gpu = types["cpu_worker"], types["gpu_worker"]
    assert CPU_ONLY_INSTANCE.match(cpu["node_config"]["InstanceType"]) and "GPU" not in cpu["resources"]
    assert GPU_INSTANCE.match(gpu["node_config"]["InstanceType"]) and gpu["resources"]["GPU"] >= 1
    assert cpu["max_workers"] > cpu["min_workers"], "CPU workers autoscale"


def test_submit_uses_one_actor_per_gpu_worker(cluster):
    args = runner_args(module_command(ray_submit_tokens(), "runners.ray_job"))
    gpu = cluster["available_node_types"]["gpu_worker"]
    assert gpu["min_workers"] == gpu["max_workers"] == int(args["--num-gpu-actors"])
    assert args["--batch-size"] == "256"
    assert args["--output"] == "$OUTPUT_PREFIX" and "--incremental" in args


def test_submit_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(DEPLOY / "ray" / "submit.sh")], check=True)


def test_cluster_uses_the_terraform_roles_and_name(cluster, tf):
    prefix = tf_default(tf, "name_prefix")
    profiles = {name: t["node_config"]["IamInstanceProfile"]["Name"]
                for name, t in cluster["available_node_types"].items()}
    assert profiles == {"head": f"{prefix}-ray-head", "cpu_worker": f"{prefix}-nodes",
                        "gpu_worker": f"{prefix}-nodes"}
    # The head may only terminate instances tagged with this cluster name (iam_nodes.tf).
    assert cluster["cluster_name"] == tf_default(tf, "ray_cluster_name")
    assert cluster["provider"]["region"] == tf_default(tf, "region")


def test_every_node_requires_the_ray_auth_token(cluster):
    assert cluster["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    for start in (cluster["head_start_ray_commands"][-1], cluster["worker_start_ray_commands"][-1]):
        assert "RAY_AUTH_MODE=token ray start" in start
    assert 'export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"' in (DEPLOY / "ray" / "submit.sh").read_text()


def test_every_node_boots_the_current_deep_learning_base_ami(cluster, tf):
    # Without an ImageId Ray 2.60 picks a CUDA 11-era DLAMI; torch 2.4+ and the Ray GPU image need CUDA 12.
    wanted = f"resolve:ssm:{tf_default(tf, 'ray_ami_ssm_parameter')}"
    assert "base-oss-nvidia-driver-gpu-ubuntu-22.04" in wanted
    for name, node_type in cluster["available_node_types"].items():
        assert node_type["node_config"].get("ImageId") == wanted, name
    # The head launches the workers: it may resolve that parameter (terraform/iam_nodes.tf).
    resolve = next(s for s in tf["data"]["aws_iam_policy_document"]["ray_autoscaler"]["statement"]
                   if s["sid"] == "ResolveDeepLearningAmi")
    assert resolve["resources"] == ["arn:${local.partition}:ssm:${local.region}::parameter${var.ray_ami_ssm_parameter}"]


def test_ray_up_uploads_the_code_but_not_git_or_virtualenvs(cluster, tmp_path):
    # The exact rsync filter arguments Ray's command runner adds, run by real rsync over this repo.
    options = {"rsync_exclude": cluster.get("rsync_exclude"), "rsync_filter": cluster.get("rsync_filter")}
    filters = SSHCommandRunner._create_rsync_filter_args(None, options)
    done = subprocess.run(["rsync", "-a", "--dry-run", "--out-format=%n", *filters, f"{REPO}/", str(tmp_path)],
                          capture_output=True, text=True, check=True, timeout=120)
    sent = done.stdout.splitlines()
    assert "runners/sagemaker_job.py" in sent and "pyproject.toml" in sent
    assert not [p for p in sent if p == ".git" or p.startswith((".git/", ".venv/", ".venv-checkov/"))]
