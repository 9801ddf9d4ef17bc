"""terraform's SageMaker model and role against what `python -m runners.sagemaker_job` builds:
the archive loads under the real toolkit with terraform's container variables, the image is
the runner's, and the role may read and write every prefix the runner stages."""

import fnmatch
import re
import tarfile
from types import SimpleNamespace

import pytest

from deploy_helpers import tf_default
from job.config import JobConfig
from runners.sagemaker import container, package
from runners.sagemaker.options import SageMakerOptions
from runners.sagemaker.serving.codecs import PARQUET
from runners.sagemaker.toolkit import Toolkit
from runners.sagemaker_job import child, staging_location
from storage import resolve
from tests.common.plans import cpu_execution
from tests.common.sagemaker import packaged_model_dir, shard_body

ACCOUNT = "123456789012"


def terraform_environment(tf) -> dict:
    return tf["resource"]["aws_sagemaker_model"]["resnet50"]["primary_container"]["environment"]


def test_terraform_model_has_the_runners_container_variables(tf, tmp_path):
    assert terraform_environment(tf) == container.environment()
    config = JobConfig(input=None, output=None, weights="random")
    names = tarfile.open(package.build_model_tar(config, cpu_execution(config), str(tmp_path))).getnames()
    assert f"code/{terraform_environment(tf)['SAGEMAKER_PROGRAM']}" in names, "the program must be a file the archive ships"


def test_terraform_model_serves_the_archive_under_the_real_toolkit(tf, tmp_path):
    toolkit = Toolkit(packaged_model_dir(str(tmp_path)), terraform_environment(tf))  # our model_fn, not the default loader
    response = toolkit.invoke(shard_body(), {"Content-Type": PARQUET})  # no Accept: as a plain invocation sends
    assert response.status == 200 and response.content_type == PARQUET, response.body[:300]


def test_terraform_image_is_the_one_the_runner_uses(tf):
    region, tag = tf_default(tf, "region"), tf_default(tf, "sagemaker_pytorch_image_tag")
    assert container.image_uri(region, "ml.g5.xlarge").endswith(f"/pytorch-inference:{tag}")
    assert tf["resource"]["aws_sagemaker_model"]["resnet50"]["enable_network_isolation"] is True


def _runner_objects(output_uri: str) -> dict[str, str]:
    """The bucket/keys one run of the runner stages, from its own staging_location."""
    job = SimpleNamespace(parts=SimpleNamespace(output=resolve(output_uri)), run_id="20261123T020000-0a1b2c3d",
                          config=SimpleNamespace(s3_endpoint_url=None))
    staging = staging_location(job, SageMakerOptions(local=False, role="arn:aws:iam::1:role/r"))
    objects = {"shard": child(child(staging, "input"), "shard-00000-0000.parquet"),
               "model": child(staging, "model.tar.gz"),
               "out": child(child(staging, "output"), "shard-00000-0000.parquet.out")}
    return {what: location.uri.removeprefix("s3://") for what, location in objects.items()}


def _arn(resource: str, tf) -> str:
    """A terraform resource string with the module ARNs and variables of a default apply."""
    prefix = tf_default(tf, "name_prefix")
    for name in ("input", "output", "model"):
        resource = resource.replace(f"${{module.{name}_bucket.arn}}", f"arn:aws:s3:::{prefix}-{name}-{ACCOUNT}")
    assert "${" not in resource, resource
    return resource


def _allows(tf, action: str, arn: str) -> bool:
    """Whether an Allow statement of the SageMaker role's policy grants ``action`` on ``arn``
    (IAM wildcards: * any run of characters, ? one)."""
    found = tf["data"]["aws_iam_policy_document"]["sagemaker"]["statement"]
    for statement in found if isinstance(found, list) else [found]:
        if action in statement["actions"] and statement.get("effect", "Allow") == "Allow":
            patterns = [re.escape(_arn(r, tf)).replace(r"\*", ".*").replace(r"\?", ".") for r in statement["resources"]]
            if any(re.fullmatch(p, arn) for p in patterns):
                return True
    return False


@pytest.mark.parametrize(("action", "what"), [("s3:GetObject", "shard"), ("s3:GetObject", "model"),
                                              ("s3:PutObject", "out")])
def test_sagemaker_role_reaches_every_object_the_runner_stages(tf, action, what):
    # The nightly layout: <output bucket>/<output_prefix><date>/, as the scheduled jobs write it.
    output = f"{tf_default(tf, 'name_prefix')}-output-{ACCOUNT}/{tf_default(tf, 'output_prefix')}2026-11-23/"
    key = _runner_objects(f"s3://{output}")[what]
    assert fnmatch.fnmatch(key, f"{output}_staging/sagemaker-*"), key
    assert _allows(tf, action, f"arn:aws:s3:::{key}"), f"the SageMaker role cannot {action} {key}"


def test_sagemaker_role_lists_the_output_bucket_but_writes_nothing_else(tf):
    prefix = tf_default(tf, "name_prefix")
    assert _allows(tf, "s3:ListBucket", f"arn:aws:s3:::{prefix}-output-{ACCOUNT}")
    assert not _allows(tf, "s3:PutObject", f"arn:aws:s3:::{prefix}-input-{ACCOUNT}/images/x.parquet")
    assert not _allows(tf, "s3:GetObject", f"arn:aws:s3:::{prefix}-output-{ACCOUNT}/preds/2026-11-23/part-a.parquet")
