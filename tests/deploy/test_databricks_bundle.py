"""deploy/databricks/: the bundle job loads with Databricks' bundle models and matches terraform."""

import os
import re
import subprocess
import sys

import pytest
from databricks.bundles.jobs import Job

from deploy_helpers import DEPLOY, GPU_INSTANCE, REPO, load_yaml, runner_args, tf_default

BUNDLE_JOB = "batch_inference_spark_nightly"


@pytest.fixture(scope="module")
def bundle() -> dict:
    return load_yaml("deploy/databricks/databricks.yml")


@pytest.fixture(scope="module")
def job(bundle) -> Job:
    return Job.from_dict(bundle["resources"]["jobs"][BUNDLE_JOB])


def test_bundle_models_reject_unknown_fields(bundle):
    # Shows the load above is a real check: a misspelt key fails it.
    with pytest.raises(ValueError, match="Unexpected field"):
        Job.from_dict({**bundle["resources"]["jobs"][BUNDLE_JOB], "schedul": {}})


def test_job_cluster_has_gpus(job):
    cluster = job.job_clusters[0].new_cluster
    assert GPU_INSTANCE.match(cluster.node_type_id) and GPU_INSTANCE.match(cluster.driver_node_type_id)
    assert "-gpu-ml-" in cluster.spark_version
    assert cluster.num_workers >= 1
    assert job.tasks[0].job_cluster_key == job.job_clusters[0].job_cluster_key


def test_schedule_is_nightly_at_two_utc_and_not_paused(job):
    assert job.schedule.quartz_cron_expression == "0 0 2 * * ?"
    assert job.schedule.timezone_id == "UTC"
    assert job.schedule.pause_status.value == "UNPAUSED"


def test_task_runs_the_spark_runner_with_the_iterator_udf(job):
    task = job.tasks[0].spark_python_task
    assert (DEPLOY / "databricks" / task.python_file).resolve() == DEPLOY / "databricks" / "spark_entry.py"
    args = runner_args([str(p) for p in task.parameters])
    assert args["--udf"] == "iterator"
    assert args["--output"] == "${var.output_prefix}" and "--incremental" in args, "one table, updated each night"
    assert [lib.whl for lib in job.tasks[0].libraries] == ["../../dist/*.whl"]


def test_every_bundle_variable_used_is_declared(bundle):
    text = (DEPLOY / "databricks" / "databricks.yml").read_text()
    used = set(re.findall(r"\$\{var\.(\w+)\}", text))
    assert used and used <= set(bundle["variables"])
    assert all(len(v.get("description", "")) > 10 for v in bundle["variables"].values())


def test_bundle_and_terraform_define_the_same_job(job, tf):
    cluster = job.job_clusters[0].new_cluster
    assert cluster.spark_version == tf_default(tf, "databricks_spark_version")
    assert cluster.node_type_id == tf_default(tf, "databricks_gpu_node_type")
    assert cluster.num_workers == tf_default(tf, "databricks_num_workers")
    assert job.schedule.quartz_cron_expression == tf_default(tf, "nightly_quartz_cron")
    bundle_flags = [str(p) for p in job.tasks[0].spark_python_task.parameters if str(p).startswith("--")]
    tf_flags = [p for p in tf["locals"]["spark_job_parameters"] if p.startswith("--")]
    assert bundle_flags == tf_flags


def test_spark_entry_runs_the_runner_module_with_the_task_parameters(tmp_path):
    # A stand-in runners.spark_job records the argv it is run with.
    (tmp_path / "runners").mkdir()
    (tmp_path / "runners" / "__init__.py").write_text("")
    (tmp_path / "runners" / "spark_job.py").write_text(
        "import json, sys\n"
        "if __name__ == '__main__':\n"
        "    print(json.dumps(sys.argv[1:]))\n")
    params = ["--input", "s3://in/", "--udf", "iterator"]
    done = subprocess.run([sys.executable, str(DEPLOY / "databricks" / "spark_entry.py"), *params],
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == '["--input", "s3://in/", "--udf", "iterator"]'


SHARED = re.compile(r"^(/Workspace)?/Shared(/|$)")  # every workspace user may write there


def test_prod_deploys_where_only_the_deployer_can_write(bundle):
    # The job runs this code with the nodes instance profile: nobody else may change it.
    root = bundle["targets"]["prod"]["workspace"]["root_path"]
    assert not SHARED.match(root), root
    assert root.startswith("/Workspace/Users/${workspace.current_user.userName}/"), root


def test_terraform_job_code_is_not_under_shared(tf):
    spark_entry = tf["resource"]["databricks_workspace_file"]["spark_entry"]["path"]
    assert spark_entry.startswith("${local.databricks_home}/"), spark_entry
    assert tf["locals"]["databricks_home"] == "${one(data.databricks_current_user.deployer[*].home)}"
    assert tf_default(tf, "databricks_wheel_path") is None  # default: under databricks_home
    assert "${local.databricks_home}" in tf["locals"]["wheel_path"]
    validation = tf["variable"]["databricks_wheel_path"]["validation"]
    assert "Shared" in validation["condition"] and "/Workspace/Shared/" in validation["error_message"]


# The runner's driver calls spark.sparkContext (parallelize, defaultParallelism), which the
# Standard (shared) access mode refuses: the job cluster must be dedicated to one user.
DEDICATED = {"SINGLE_USER", "DATA_SECURITY_MODE_DEDICATED"}


def test_the_job_cluster_is_dedicated_so_the_runner_may_use_the_spark_context(job, tf):
    spark_code = [p.read_text() for p in (REPO / "runners").rglob("*.py") if "spark" in str(p.relative_to(REPO))]
    assert any("sparkContext" in code for code in spark_code), "the reason for this pin went away: revisit it"
    mode = job.job_clusters[0].new_cluster.data_security_mode
    assert mode is not None and mode.value in DEDICATED, f"bundle: access mode {mode} is not pinned to dedicated"
    terraform = tf["resource"]["databricks_job"]["nightly_spark"]["job_cluster"]["new_cluster"]
    assert terraform.get("data_security_mode") in DEDICATED, "terraform's job cluster: access mode not pinned"


def test_the_night_writes_delta_and_a_task_after_it_registers_the_table(job):
    predict, register = job.tasks
    assert runner_args([str(p) for p in predict.spark_python_task.parameters])["--table-format"] == "delta"
    assert [d.task_key for d in register.depends_on] == [predict.task_key]
    assert register.spark_python_task.python_file == "./register_table.py"
    assert [str(p) for p in register.spark_python_task.parameters] == ["${var.table_name}", "${var.output_prefix}"]
    sys.path.insert(0, str(DEPLOY / "databricks"))
    try:
        from register_table import statement
    finally:
        sys.path.pop(0)
    assert statement("main.batch_inference.predictions", "s3://b-out/preds/") == (
        "CREATE TABLE IF NOT EXISTS main.batch_inference.predictions USING DELTA LOCATION 's3://b-out/preds/'")
    for name, location in (("main.x; DROP TABLE y", "s3://b/p/"), ("main.s.t", "s3://b/p' OR '1")):
        with pytest.raises(SystemExit, match="^error: "):
            statement(name, location)


def test_the_registered_tables_location_lies_in_terraforms_unity_catalog_external_location(bundle, tf):
    import deploy_iam

    external = deploy_iam.resolve(tf, tf["resource"]["databricks_external_location"]["output"]["url"])
    registered = bundle["variables"]["output_prefix"]["default"].replace("ACCOUNT_ID", deploy_iam.ACCOUNT)
    assert registered.startswith(external.rstrip("/") + "/") or registered == external, (registered, external)
    assert "databricks_external_location_url" in bundle["variables"]["output_prefix"]["description"]
