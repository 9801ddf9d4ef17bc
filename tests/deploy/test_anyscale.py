"""deploy/anyscale/: the job, schedule and compute configs load with the Anyscale SDK's own models; the night's
Delta table is registered in the Glue database terraform declares, with the calls its policy grants."""

import re
import shlex

import pytest
from anyscale.compute_config.models import ComputeConfig
from anyscale.job.models import JobConfig
from anyscale.schedule.models import ScheduleConfig

import deploy_iam
from deploy_helpers import (CPU_ONLY_INSTANCE, DEPLOY, DOCS, GPU_INSTANCE, load_yaml, module_command,
                      runner_args, tf_default)
from job.config import GLUE_TABLE_NAME
from runners.ray.glue import GLUE_ACTIONS

ANYSCALE = DEPLOY / "anyscale"


@pytest.fixture(scope="module")
def job() -> JobConfig:
    return JobConfig.from_yaml(str(ANYSCALE / "job.yaml"))


@pytest.fixture(scope="module")
def schedule() -> ScheduleConfig:
    return ScheduleConfig.from_yaml(str(ANYSCALE / "schedule.yaml"))


@pytest.fixture(scope="module")
def compute() -> ComputeConfig:
    return ComputeConfig.from_yaml(str(ANYSCALE / "compute_config.yaml"))


def gpu_group(compute: ComputeConfig):
    return next(g for g in compute.worker_nodes if GPU_INSTANCE.match(g.instance_type))


def test_compute_config_is_heterogeneous(compute):
    groups = {g.name: g for g in compute.worker_nodes}
    assert GPU_INSTANCE.match(groups["gpu-inference"].instance_type)
    assert CPU_ONLY_INSTANCE.match(groups["cpu-preprocess"].instance_type)
    assert groups["cpu-preprocess"].max_nodes > groups["cpu-preprocess"].min_nodes, "CPU group should autoscale"
    assert compute.head_node.resources == {"CPU": 0}, "no read or decode task on the head"


def test_job_runs_the_ray_runner_with_one_gpu_actor_per_gpu_node(job, compute):
    args = runner_args(module_command(shlex.split(job.entrypoint), "runners.ray_job"))
    gpus = gpu_group(compute)
    assert gpus.min_nodes == gpus.max_nodes, "GPU actor pool is fixed-size: GPU pools autoscaling from 1 have been seen stuck at 1 (ray#59144)"
    assert int(args["--num-gpu-actors"]) == gpus.max_nodes
    assert args["--batch-size"] == "256"
    assert args["--input"] == "$INPUT_URI" and args["--weights"] == "$WEIGHTS_URI"
    assert args["--output"] == "$OUTPUT_PREFIX" and "--incremental" in args, "one table, updated each night"
    assert set(job.env_vars) == {"INPUT_URI", "OUTPUT_PREFIX", "WEIGHTS_URI", "GLUE_TABLE"}


def test_job_uses_the_registered_compute_config_the_docs_create(job):
    header = (ANYSCALE / "compute_config.yaml").read_text()
    create = f"anyscale compute-config create -n {job.compute_config} -f deploy/anyscale/compute_config.yaml"
    assert create in header and create in DOCS.read_text()


def test_job_installs_the_project_dependencies(job):
    names = {re.split(r"[<>=!~\[]", r)[0] for r in job.requirements}
    assert {"torch", "torchvision", "pillow", "pyarrow", "numpy"} <= names
    assert job.image_uri.startswith("anyscale/ray:2.60.0-")


def test_env_vars_point_at_the_terraform_buckets(job, tf):
    assert set(job.env_vars) == set(tf["output"]["job_env"]["value"])
    prefix = tf["variable"]["name_prefix"]["default"]
    assert job.env_vars["INPUT_URI"].startswith(f"s3://{prefix}-input-")
    assert job.env_vars["OUTPUT_PREFIX"].startswith(f"s3://{prefix}-output-")
    assert job.env_vars["WEIGHTS_URI"].startswith(f"s3://{prefix}-model-")


def test_schedule_runs_nightly_at_two_utc(schedule):
    assert schedule.cron_expression == "0 2 * * *"
    assert schedule.timezone == "UTC"


def test_schedule_runs_exactly_the_job_of_job_yaml(schedule, job):
    scheduled = {**schedule.job_config.to_dict(), "name": None}
    assert scheduled == {**job.to_dict(), "name": None}
    assert schedule.job_config.name.endswith("-nightly")


def test_schedule_model_rejects_a_top_level_name():
    raw = load_yaml("deploy/anyscale/schedule.yaml")
    assert "name" not in raw
    with pytest.raises(TypeError):
        ScheduleConfig.from_dict({**raw, "name": "nightly"})


def test_the_night_writes_delta_and_registers_it_in_the_glue_database_terraform_declares(job, tf):
    args = runner_args(module_command(shlex.split(job.entrypoint), "runners.ray_job"))
    assert args["--table-format"] == "delta" and args["--glue-table"] == "$GLUE_TABLE"
    assert tf["output"]["job_env"]["value"]["GLUE_TABLE"] == "${var.glue_database}.${var.glue_delta_table}"
    name = job.env_vars["GLUE_TABLE"]
    assert name == f"{tf_default(tf, 'glue_database')}.{tf_default(tf, 'glue_delta_table')}"
    assert GLUE_TABLE_NAME.fullmatch(name), f"--glue-table refuses {name}"
    assert "boto3" in {re.split(r"[<>=!~\[]", r)[0] for r in job.requirements}, "the registration calls Glue through boto3"


def test_the_glue_policy_grants_every_call_the_registration_makes_and_only_in_its_database(tf):
    database, table = load_yaml("deploy/anyscale/job.yaml")["env_vars"]["GLUE_TABLE"].split(".")
    arn = f"arn:aws:glue:{tf_default(tf, 'region')}:{deploy_iam.ACCOUNT}"
    glue = deploy_iam.policy(tf, "glue_commit")
    for action in GLUE_ACTIONS:  # recorded against moto's Glue by tests/integration/test_glue_registration.py
        resources = [f"{arn}:catalog", f"{arn}:database/{database}"] + ([f"{arn}:table/{database}/{table}"]
                                                                        if action != "GetDatabase" else [])
        assert all(glue.allows(f"glue:{action}", r) for r in resources), action
        assert not glue.allows(f"glue:{action}", f"{arn}:table/other_db/{table}"), action
    docs = DOCS.read_text()
    assert "glue_commit_policy_arn" in docs, "docs/DEPLOY.md must say to attach the Glue policy to the Anyscale cloud's role"
