# The SageMaker execution role: what a Batch Transform job of `python -m runners.sagemaker_job`
# may touch, and nothing else. The runner stages each run in the staging bucket
# (sagemaker.tf): shards under sagemaker-<run id>/input/, model.tar.gz beside them; the job
# reads those and writes its .out objects under sagemaker-<run id>/output/. The role reads no
# input, weights or output bucket and writes nowhere else: committed parts, _SUCCESS.json and
# _lease.json are out of its reach (tests/deploy evaluates this policy against every object).
#
# The machine that runs the runner needs the other policy here, sagemaker_runner (plus
# job_data, iam_nodes.tf): it stages, creates the run's model and transform job, and passes
# this role to SageMaker.
data "aws_iam_policy_document" "sagemaker_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["sagemaker.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "sagemaker" {
  statement {
    # The transform job lists its S3Prefix input (a run's shards). The bucket holds nothing but
    # the runs' staging, so listing it shows no other data.
    sid       = "ListStaging"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [module.staging_bucket.arn]
  }

  statement {
    sid     = "ReadRunShardsAndModel"
    actions = ["s3:GetObject"]
    resources = [
      "${module.staging_bucket.arn}/${local.sagemaker_run_prefix}/input/*",
      "${module.staging_bucket.arn}/${local.sagemaker_run_prefix}/model.tar.gz",
    ]
  }

  statement {
    sid       = "WriteRunOutput"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${module.staging_bucket.arn}/${local.sagemaker_run_prefix}/output/*"]
  }

  statement {
    sid       = "UseBucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]
  }

  statement {
    # ecr:GetAuthorizationToken has no resource-level permissions: AWS requires "*".
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"]
  }

  statement {
    sid = "PullPytorchInferenceImage"
    actions = [
      "ecr:BatchCheckLayerAvailability",
      "ecr:BatchGetImage",
      "ecr:GetDownloadUrlForLayer",
    ]
    resources = [
      "arn:${local.partition}:ecr:${local.region}:${data.aws_sagemaker_prebuilt_ecr_image.pytorch_inference.registry_id}:repository/pytorch-inference",
    ]
  }

  statement {
    sid = "TransformJobLogs"
    actions = [
      "logs:CreateLogGroup",
      "logs:CreateLogStream",
      "logs:DescribeLogStreams",
      "logs:PutLogEvents",
    ]
    resources = [
      "arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:/aws/sagemaker/TransformJobs",
      "arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:/aws/sagemaker/TransformJobs:*",
    ]
  }

  statement {
    # cloudwatch:PutMetricData has no resource-level permissions: AWS requires "*";
    # the namespace condition narrows it to SageMaker's transform metrics.
    sid       = "TransformJobMetrics"
    actions   = ["cloudwatch:PutMetricData"]
    resources = ["*"]

    condition {
      test     = "StringLike"
      variable = "cloudwatch:namespace"
      values   = ["/aws/sagemaker/TransformJobs"]
    }
  }
}

resource "aws_iam_role" "sagemaker" {
  name               = "${var.name_prefix}-sagemaker"
  description        = "SageMaker Batch Transform execution role of ${var.name_prefix}."
  assume_role_policy = data.aws_iam_policy_document.sagemaker_assume.json
}

resource "aws_iam_role_policy" "sagemaker" {
  name   = "batch-transform"
  role   = aws_iam_role.sagemaker.id
  policy = data.aws_iam_policy_document.sagemaker.json
}

# What the machine running `python -m runners.sagemaker_job` needs beyond job_data (input, weights,
# output): its run's staging, the SageMaker calls of runners/sagemaker/aws.py (API_OPERATIONS) on
# the run's own model and transform job, and handing the execution role to SageMaker only.
data "aws_iam_policy_document" "sagemaker_runner" {
  # The runner's driver commits the night: with --iceberg-catalog glue, through Glue (glue.tf).
  source_policy_documents = [data.aws_iam_policy_document.glue_commit.json]

  statement {
    sid       = "ListStaging"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [module.staging_bucket.arn]
  }

  statement {
    # DeleteObject: the runner removes its run's staging once the parts are committed.
    sid       = "StageRuns"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${module.staging_bucket.arn}/${local.sagemaker_run_prefix}/*"]
  }

  statement {
    sid       = "UseBucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]
  }

  statement {
    sid = "RunOwnModelsAndTransformJobs"
    actions = [
      "sagemaker:CreateModel",
      "sagemaker:DeleteModel",
      "sagemaker:CreateTransformJob",
      "sagemaker:DescribeTransformJob",
    ]
    resources = [
      "arn:${local.partition}:sagemaker:${local.region}:${local.account_id}:model/${local.sagemaker_run_name}",
      "arn:${local.partition}:sagemaker:${local.region}:${local.account_id}:transform-job/${local.sagemaker_run_name}",
    ]
  }

  statement {
    sid       = "PassExecutionRoleToSageMaker"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.sagemaker.arn]

    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["sagemaker.amazonaws.com"]
    }
  }
}

resource "aws_iam_policy" "sagemaker_runner" {
  name        = "${var.name_prefix}-sagemaker-runner"
  description = "Run python -m runners.sagemaker_job for ${var.name_prefix}: staging, the run's model and transform job, the execution role. Attach with job_data."
  policy      = data.aws_iam_policy_document.sagemaker_runner.json
}
