"""Every scheduled command line uses only the runners' options, and all platforms run at one hour."""

import shlex

import pytest
from anyscale.job.models import JobConfig

from deploy_helpers import DEPLOY, DOCS, load_yaml, module_command, ray_submit_tokens, runner_args

# The runner contract (job/cli.py): options every runner shares, and the engine-only ones.
SHARED = {"--input", "--output", "--weights", "--s3-endpoint-url", "--limit", "--batch-size",
          "--precision", "--overwrite", "--resume", "--image-column", "--id-column"}
ENGINE = {"runners.ray_job": {"--address", "--num-gpu-actors", "--num-cpu-actors"},
          "runners.spark_job": {"--udf"}}
REQUIRED = {"--input", "--output", "--weights"}


def anyscale_tokens() -> list[str]:
    job = JobConfig.from_yaml(str(DEPLOY / "anyscale" / "job.yaml"))
    return module_command(shlex.split(job.entrypoint), "runners.ray_job")


def bundle_tokens() -> list[str]:
    bundle = load_yaml("deploy/databricks/databricks.yml")
    return bundle["resources"]["jobs"]["batch_inference_spark_nightly"]["tasks"][0][
        "spark_python_task"]["parameters"]


COMMANDS = {
    "anyscale job": ("runners.ray_job", anyscale_tokens),
    "ray submit.sh": ("runners.ray_job", lambda: module_command(ray_submit_tokens(), "runners.ray_job")),
    "databricks bundle": ("runners.spark_job", bundle_tokens),
}


@pytest.mark.parametrize("where", COMMANDS)
def test_command_uses_only_runner_options(where):
    module, tokens = COMMANDS[where]
    args = runner_args(tokens())
    assert REQUIRED <= set(args), f"{where}: missing {REQUIRED - set(args)}"
    unknown = set(args) - SHARED - ENGINE[module]
    assert not unknown, f"{where}: {module} has no option {unknown}"


def test_terraform_spark_command_uses_only_runner_options(tf):
    args = runner_args(tf["locals"]["spark_job_parameters"])
    assert REQUIRED <= set(args) and not set(args) - SHARED - ENGINE["runners.spark_job"]


def test_every_platform_runs_nightly_at_two_utc_as_the_docs_say(tf):
    anyscale = load_yaml("deploy/anyscale/schedule.yaml")
    bundle = load_yaml("deploy/databricks/databricks.yml")["resources"]["jobs"][
        "batch_inference_spark_nightly"]["schedule"]
    assert (anyscale["cron_expression"], anyscale["timezone"]) == ("0 2 * * *", "UTC")
    assert (bundle["quartz_cron_expression"], bundle["timezone_id"]) == ("0 0 2 * * ?", "UTC")
    assert tf["variable"]["nightly_quartz_cron"]["default"] == bundle["quartz_cron_expression"]
    assert tf["variable"]["nightly_timezone"]["default"] == "UTC"
    docs = DOCS.read_text()
    assert "02:00 UTC" in docs and "0 2 * * *" in docs and "0 0 2 * * ?" in docs


@pytest.mark.parametrize("where", [w for w, (module, _) in COMMANDS.items() if module == "runners.ray_job"])
def test_ray_commands_parse_with_the_real_parser(where):
    """The scheduled Ray command lines are accepted by the job's own argument parser."""
    from job.cli import config_from_args
    from runners.ray_job import ENGINE

    _, tokens = COMMANDS[where]
    args = ENGINE.args_parser().parse_args(tokens())
    config = config_from_args(args)  # the shared validation accepts it too
    assert config.input and config.output and config.weights != "random" and config.resume
