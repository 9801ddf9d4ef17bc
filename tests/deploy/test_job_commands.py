"""Every scheduled command line uses only the runners' options, and all platforms run at one hour."""

import re
import shlex
import subprocess

import pytest
from anyscale.job.models import JobConfig

from deploy_helpers import DEPLOY, DOCS, REPO, load_yaml, module_command, ray_submit_tokens, runner_args, script_command

# The runner contract (job/cli.py): options every runner shares, and the engine-only ones.
SHARED = {"--input", "--output", "--weights", "--s3-endpoint-url", "--limit", "--batch-size",
          "--precision", "--overwrite", "--resume", "--incremental", "--keep-removed", "--image-column", "--id-column",
          "--table-format", "--time-travel-days"}
ENGINE = {"runners.ray_job": {"--address", "--num-gpu-actors", "--num-cpu-actors", "--glue-table"},
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
    assert config.input and config.output and config.weights != "random" and config.incremental


SAGEMAKER_NIGHTLY = "deploy/sagemaker/nightly.sh"


def test_sagemaker_nightly_parses_with_the_real_parser():
    from job.cli import config_from_args
    from runners.sagemaker.options import options_from_args
    from runners.sagemaker_job import ENGINE as SAGEMAKER

    args = SAGEMAKER.args_parser().parse_args(script_command(SAGEMAKER_NIGHTLY, "runners.sagemaker_job")[3:])
    options, config = options_from_args(args), config_from_args(args)
    assert not options.local and options.role == "$SAGEMAKER_ROLE_ARN" and options.staging_s3_uri == "$SAGEMAKER_STAGING_URI"
    assert config.incremental and config.weights == "$WEIGHTS_URI" and args.output == "$OUTPUT_PREFIX"


def test_sagemaker_nightly_takes_every_value_from_terraform_outputs(tf):
    script = (REPO / SAGEMAKER_NIGHTLY).read_text()
    used = set(re.findall(r'"\$\{?([A-Z_]+)\}?', script)) | set(re.findall(r'\$\{([A-Z_]+):\?', script))
    provided = set(tf["output"]["job_env"]["value"]) | set(tf["output"]["sagemaker_env"]["value"])
    assert used and used <= provided, f"{SAGEMAKER_NIGHTLY} needs {used - provided}, which no terraform output gives"
    subprocess.run(["bash", "-n", str(REPO / SAGEMAKER_NIGHTLY)], check=True)
