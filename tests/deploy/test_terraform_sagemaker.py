"""terraform against what `python -m runners.sagemaker_job` does on AWS, evaluated object by object.

A fresh apply creates no SageMaker model it cannot create (the runner makes one per run); the
image is the runner's; the nightly stages in a bucket where deleted shards leave no versions;
and least privilege, judged with IAM's own rules (deploy_iam): the execution role reaches the
run's staging objects that a transform job reads and writes, and nothing of the job's input,
weights, output, manifest or lease; the runner's policy reaches its staging, its own model and
transform job, and hands the role to SageMaker only.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import deploy_iam
from deploy_helpers import expand, script_command, tf_default
from job.lease.lease import LEASE_NAME
from job.night.manifest import MANIFEST
from job.output.parts import PART_PREFIX, PART_SUFFIX, STAGING
from runners.sagemaker import aws, container
from runners.sagemaker_job import ENGINE, child, staging_location
from runners.sagemaker.options import options_from_args
from storage import resolve

NIGHTLY = "deploy/sagemaker/nightly.sh"
DATE, RUN_ID = "2026-11-23", "20261123T020000-0a1b2c3d"


def arn(uri: str) -> str:
    return f"arn:aws:s3:::{uri.removeprefix('s3://')}"


@pytest.fixture(scope="module")
def nightly(tf) -> SimpleNamespace:
    """What one run of the SageMaker nightly touches: its options, and the S3 objects of a
    default apply that the run's transform job, the job around it and the rest of the data are."""
    env = {name: deploy_iam.resolve(tf, value) for output in ("job_env", "sagemaker_env")
           for name, value in tf["output"][output]["value"].items()}
    tokens = [expand(t, env, DATE) for t in script_command(NIGHTLY, "runners.sagemaker_job")[3:]]
    args = ENGINE.args_parser().parse_args(tokens)
    options = options_from_args(args)
    job = SimpleNamespace(parts=SimpleNamespace(output=resolve(args.output)), run_id=RUN_ID,
                          config=SimpleNamespace(s3_endpoint_url=None))
    staging = staging_location(job, options)
    output = args.output
    return SimpleNamespace(
        options=options, args=args, env=env, staging=staging,
        shard=child(child(staging, "input"), "shard-00000-0000.parquet").uri,
        model=child(staging, "model.tar.gz").uri,
        out=child(child(staging, "output"), "shard-00000-0000.parquet.out").uri,
        committed={"part": f"{output}{PART_PREFIX}images-0a1b2c3d{PART_SUFFIX}", "manifest": f"{output}{MANIFEST}",
                   "lease": f"{output}{LEASE_NAME}", "job staging": f"{output}{STAGING}/part-x.parquet"},
        input=f"{args.input}part-00000.parquet", weights=args.weights,
    )


def test_no_sagemaker_model_points_at_an_archive_the_apply_does_not_upload(tf):
    # CreateModel refuses a ModelDataUrl with nothing behind it ("Could not find model data"):
    # a model in the same apply as its bucket needs that apply to upload its archive.
    uploads = {f"s3://{deploy_iam.resolve(tf, o['bucket'])}/{deploy_iam.resolve(tf, o['key'])}"
               for o in tf["resource"].get("aws_s3_object", {}).values()}
    for name, model in tf["resource"].get("aws_sagemaker_model", {}).items():
        url = deploy_iam.resolve(tf, model["primary_container"]["model_data_url"])
        assert url in uploads, f"aws_sagemaker_model.{name} reads {url}, which no aws_s3_object of this apply uploads"


def test_the_image_is_the_one_the_runner_uses(tf):
    region, tag = tf_default(tf, "region"), tf_default(tf, "sagemaker_pytorch_image_tag")
    assert tf["data"]["aws_sagemaker_prebuilt_ecr_image"]["pytorch_inference"]["repository_name"] == "pytorch-inference"
    assert container.image_uri(region, "ml.g5.xlarge").endswith(f"/pytorch-inference:{tag}")


def test_the_nightly_stages_where_deleted_shards_leave_no_versions(tf, nightly):
    # Each run copies its input into staging and deletes it; in a versioned bucket every deleted
    # copy stays as a noncurrent version until it expires: days x nights of input.
    bucket = nightly.staging.uri.removeprefix("s3://").split("/", 1)[0]
    [module] = [m for name, m in tf["module"].items() if deploy_iam.bucket_name(tf, name) == bucket]
    versioned = module.get("versioned", True)
    kept_days = int(deploy_iam.resolve(tf, str(module["noncurrent_version_expiration_days"]))) if versioned else 0
    assert kept_days <= 1, f"staging {nightly.staging.uri} is in a versioned bucket keeping deleted copies {kept_days} days"
    assert module.get("expiration_days"), "what a killed run leaves in staging must expire"


def test_the_bucket_module_versions_unless_told_not_to(tf_bucket_module):
    assert tf_bucket_module["resource"]["aws_s3_bucket_versioning"]["this"]["count"] == "${var.versioned ? 1 : 0}"
    assert tf_bucket_module["variable"]["versioned"]["default"] is True


@pytest.mark.parametrize(("action", "what"), [("s3:GetObject", "shard"), ("s3:GetObject", "model"), ("s3:PutObject", "out")])
def test_the_role_reaches_every_object_a_transform_job_of_the_runner_touches(tf, nightly, action, what):
    role = deploy_iam.policy(tf, "sagemaker")
    uri = getattr(nightly, what)
    assert role.allows(action, arn(uri)), f"the execution role cannot {action} {uri}"
    assert role.allows("s3:ListBucket", arn(nightly.staging.uri.split("/", 3)[2]))  # the S3Prefix input
    key = deploy_iam.resolve(tf, "${aws_kms_key.data.arn}")
    assert role.allows("kms:Decrypt", key) and role.allows("kms:GenerateDataKey", key)


@pytest.mark.parametrize("action", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"])
def test_the_role_touches_nothing_of_the_job_and_no_input(tf, nightly, action):
    role = deploy_iam.policy(tf, "sagemaker")
    never = {**nightly.committed, "input": nightly.input, "weights": nightly.weights}
    reached = {what: uri for what, uri in never.items() if role.allows(action, arn(uri))}
    assert not reached, f"the execution role may {action}: {reached}"


def test_the_role_writes_only_its_output_and_reads_only_shards_and_model(tf, nightly):
    role = deploy_iam.policy(tf, "sagemaker")
    assert not role.allows("s3:PutObject", arn(nightly.shard)) and not role.allows("s3:PutObject", arn(nightly.model))
    assert not role.allows("s3:GetObject", arn(nightly.out))
    assert not any(role.allows("s3:DeleteObject", arn(uri)) for uri in (nightly.shard, nightly.model, nightly.out))
    for bucket in ("input_bucket", "output_bucket", "model_bucket"):
        assert not role.allows("s3:ListBucket", f"arn:aws:s3:::{deploy_iam.bucket_name(tf, bucket)}"), bucket


def test_the_runner_policy_covers_the_runners_own_calls_and_staging(tf, nightly):
    runner = deploy_iam.policy(tf, "sagemaker_runner")
    name, region = aws.job_name(RUN_ID).lower(), tf_default(tf, "region")
    for operation in aws.API_OPERATIONS:
        kind = "model" if operation.endswith("Model") else "transform-job"
        resource = f"arn:aws:sagemaker:{region}:{deploy_iam.ACCOUNT}:{kind}/{name}"
        assert runner.allows(f"sagemaker:{operation}", resource), f"the runner cannot {operation} {resource}"
        assert not runner.allows(f"sagemaker:{operation}", resource.replace(name, "someone-elses")), operation
    for uri in (nightly.shard, nightly.model, nightly.out):
        assert all(runner.allows(a, arn(uri)) for a in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject")), uri
    for uri in [*nightly.committed.values(), nightly.input]:  # job_data's business, not this policy's
        assert not runner.allows("s3:PutObject", arn(uri)), uri


def test_the_runner_hands_the_role_to_sagemaker_only(tf, nightly):
    runner = deploy_iam.policy(tf, "sagemaker_runner")
    role = nightly.env["SAGEMAKER_ROLE_ARN"]
    assert nightly.args.role == role
    assert runner.allows("iam:PassRole", role, {"iam:PassedToService": "sagemaker.amazonaws.com"})
    assert not runner.allows("iam:PassRole", role, {"iam:PassedToService": "ec2.amazonaws.com"})
    assert not runner.allows("iam:PassRole", role)  # the key missing: the condition fails
    assert not runner.allows("iam:PassRole", deploy_iam.resolve(tf, "${aws_iam_role.nodes.arn}"),
                             {"iam:PassedToService": "sagemaker.amazonaws.com"})


def test_the_evaluator_follows_iam_rules():
    allow = deploy_iam.Statement("a", "Allow", actions=("s3:Get*",), resources=("arn:aws:s3:::b/run-*/in/*",))
    deny = deploy_iam.Statement("d", "Deny", actions=("s3:*",), resources=("arn:aws:s3:::b/run-9/*",))
    listing = deploy_iam.Statement("l", "Allow", actions=("s3:ListBucket",), resources=("arn:aws:s3:::b",),
                                   conditions=(("StringLike", "s3:prefix", ("run-*",)),))
    policy = deploy_iam.Policy([allow, deny, listing])
    assert policy.allows("S3:GETOBJECT", "arn:aws:s3:::b/run-1/x/in/y")  # actions ignore case; * spans "/"
    assert not policy.allows("s3:GetObject", "arn:aws:s3:::B/run-1/in/y")  # resources do not
    assert not policy.allows("s3:GetObject", "arn:aws:s3:::b/run-9/in/y")  # an explicit Deny wins
    assert not policy.allows("s3:PutObject", "arn:aws:s3:::b/run-1/in/y")  # nothing allows it
    assert policy.allows("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": "run-1/in/"})
    assert not policy.allows("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": "other/"})
    assert not policy.allows("s3:ListBucket", "arn:aws:s3:::b")  # no prefix in the request
    with pytest.raises(AssertionError, match="NumericLessThan"):
        deploy_iam.Policy([deploy_iam.Statement("n", "Allow", actions=("s3:*",), resources=("*",),
                                                conditions=(("NumericLessThan", "s3:max-keys", ("10",)),))]
                          ).allows("s3:ListBucket", "arn:aws:s3:::b", {"s3:max-keys": "5"})
