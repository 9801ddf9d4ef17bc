"""runners.capacity --write-deploy: the sized copies load with each tool's own loader, hold the counts chosen, and leave
the repository's deploy files as they were."""

from __future__ import annotations

import filecmp
import shlex
import shutil
import subprocess

import pytest
from anyscale.compute_config.models import ComputeConfig
from anyscale.job.models import JobConfig
from anyscale.schedule.models import ScheduleConfig
from databricks.bundles.jobs import Job

from deploy_helpers import DEPLOY, load_yaml, module_command, runner_args
from job.costs.layout import RAY_CPU_NODE, RAY_HEAD
from job.errors import JobError
from runners import capacity

BUNDLE_JOB = "batch_inference_spark_nightly"
# 500 million images by 6 hours on H100s, the shipped rates' GPU.
QUESTION = ["--images", "500000000", "--deadline", "6h", "--instance", "p5.48xlarge"]


def sized(tmp_path, *more: str) -> dict:
    return capacity.main([*QUESTION, "--write-deploy", str(tmp_path), *more])


def test_the_sized_anyscale_configs_load_and_hold_the_counts(tmp_path):
    answer = sized(tmp_path, "--engine", "ray", "--vcpus-per-gpu", "36")  # 36 a GPU: more than the GPU nodes hold
    nodes = {n["role"]: n for n in answer["nodes"]}
    compute = ComputeConfig.from_yaml(str(tmp_path / "anyscale" / "compute_config.yaml"))
    groups = {g.name: g for g in compute.worker_nodes}
    gpu, cpu = groups["gpu-inference"], groups["cpu-preprocess"]
    assert gpu.instance_type == "p5.48xlarge" and gpu.min_nodes == gpu.max_nodes == nodes["GPU workers"]["count"]
    assert cpu.instance_type == RAY_CPU_NODE and cpu.min_nodes == cpu.max_nodes == nodes["CPU-only decoders"]["count"] > 0
    assert 8 * gpu.max_nodes * 36 <= 192 * gpu.max_nodes + 16 * cpu.max_nodes  # every GPU fed its 36 vCPU
    assert compute.head_node.instance_type == RAY_HEAD and compute.head_node.resources == {"CPU": 0}
    job = JobConfig.from_yaml(str(tmp_path / "anyscale" / "job.yaml"))
    schedule = ScheduleConfig.from_yaml(str(tmp_path / "anyscale" / "schedule.yaml"))
    for entrypoint in (job.entrypoint, schedule.job_config.entrypoint):
        args = runner_args(module_command(shlex.split(entrypoint), "runners.ray_job"))
        assert int(args["--num-gpu-actors"]) == answer["gpus"] == 8 * gpu.max_nodes
    assert "set by runners.capacity: 500,000,000 images by 6 h 00 min" in (tmp_path / "anyscale" / "compute_config.yaml").read_text()


def test_the_sized_databricks_bundle_loads_and_holds_the_counts(tmp_path):
    answer = sized(tmp_path, "--engine", "spark")
    bundle = load_yaml(str(tmp_path / "databricks" / "databricks.yml"))
    with pytest.raises(ValueError, match="Unexpected field"):  # the loader checks what it loads
        Job.from_dict({**bundle["resources"]["jobs"][BUNDLE_JOB], "schedul": {}})
    cluster = Job.from_dict(bundle["resources"]["jobs"][BUNDLE_JOB]).job_clusters[0].new_cluster
    assert cluster.node_type_id == cluster.driver_node_type_id == "p5.48xlarge"
    assert answer["instances"]["p5.48xlarge"] == cluster.num_workers + 1  # the driver is a node of the same type
    assert answer["gpus"] == 8 * cluster.num_workers
    assert bundle["variables"] == load_yaml("deploy/databricks/databricks.yml")["variables"]


def test_the_sized_sagemaker_script_runs_the_real_parser(tmp_path):
    from job.cli import config_from_args
    from runners.sagemaker.options import options_from_args
    from runners.sagemaker_job import ENGINE as SAGEMAKER

    answer = sized(tmp_path, "--engine", "sagemaker")
    script = tmp_path / "sagemaker" / "nightly.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    line = next(l for l in script.read_text().replace("\\\n", " ").splitlines() if l.lstrip().startswith("python -m"))
    args = SAGEMAKER.args_parser().parse_args(shlex.split(line)[3:])
    options = options_from_args(args)
    config_from_args(args)
    assert options.instance_type == "ml.p5.48xlarge" and options.instance_count == answer["instances"]["p5.48xlarge"]
    assert answer["gpus"] == options.instance_count  # the handler's model runs on each instance's first GPU
    assert "no price for p5.48xlarge" in answer["price"]


def test_the_repositorys_deploy_files_are_never_written(tmp_path):
    before = tmp_path / "before"
    shutil.copytree(DEPLOY, before)
    with pytest.raises(JobError, match="would overwrite .*compute_config.yaml itself"):
        capacity.main([*QUESTION, "--engine", "ray", "--write-deploy", str(DEPLOY)])
    for folder in ("anyscale", "databricks", "sagemaker"):
        same = filecmp.dircmp(DEPLOY / folder, before / folder)
        assert not same.diff_files and not same.left_only, (folder, same.diff_files)


def test_the_ray_layouts_head_and_cpu_group_are_the_shipped_compute_configs():
    compute = load_yaml("deploy/anyscale/compute_config.yaml")
    groups = {g["name"]: g for g in compute["worker_nodes"]}
    assert (compute["head_node"]["instance_type"], groups["cpu-preprocess"]["instance_type"]) == (RAY_HEAD, RAY_CPU_NODE)
