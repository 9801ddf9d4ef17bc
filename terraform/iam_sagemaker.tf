# The SageMaker execution role: what a Batch Transform job of the ResNet50 model may touch.
# Model archive and input in, predictions out, the DLC image pulled, logs and metrics written.
# `python -m runners.sagemaker_job` stages its shards and model.tar.gz under
# <output>/_staging/sagemaker-<run id>/ in the output bucket and has the job read them there
# and write its .out objects beside them: so the role lists the output bucket, reads staging
# objects, and writes (tests/deploy checks the runner's own prefixes against this policy).

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
    sid       = "ReadModelArchive"
    actions   = ["s3:GetObject"]
    resources = ["${module.model_bucket.arn}/model.tar.gz"]
  }

  statement {
    # The output bucket: a transform job lists its S3Prefix input, the runner's staged shards.
    sid       = "ListInputAndStaging"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [module.input_bucket.arn, module.output_bucket.arn]
  }

  statement {
    sid       = "ReadInput"
    actions   = ["s3:GetObject"]
    resources = ["${module.input_bucket.arn}/*"]
  }

  statement {
    # Shards and model.tar.gz the runner staged under any <output>/_staging/ prefix.
    sid       = "ReadRunnerStaging"
    actions   = ["s3:GetObject"]
    resources = ["${module.output_bucket.arn}/*_staging/*"]
  }

  statement {
    sid       = "WriteTransformOutput"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${module.output_bucket.arn}/*"]
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
