# The three data buckets the jobs use and the bucket their access logs go to. Each one is the
# module in modules/s3_bucket: encrypted, public access blocked, versioned, TLS-only. (The
# SageMaker staging bucket, unversioned, is in sagemaker.tf.)

module "input_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-input-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = module.logs_bucket.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

module "output_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-output-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = module.logs_bucket.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

module "model_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-model-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = module.logs_bucket.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

# Receives the S3 server access logs of the data buckets. It differs where it must: S3 log
# delivery cannot write to SSE-KMS buckets, it logs nowhere itself, and its policy lets the
# S3 logging service write. The skips below apply to this module instance only.
module "logs_bucket" {
  #checkov:skip=CKV_AWS_18:This is the access-log target; logging it into itself would loop.
  #checkov:skip=CKV_AWS_145:S3 server access log delivery supports only SSE-S3 (AES256) on the target bucket.
  source                             = "./modules/s3_bucket"
  name                               = local.logs_bucket_name
  kms_key_arn                        = null
  access_log_bucket                  = null
  expiration_days                    = var.access_log_expiration_days
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = 1
  extra_policy_documents             = [data.aws_iam_policy_document.log_delivery.json]
}

# With ACLs disabled (BucketOwnerEnforced) log delivery is granted by bucket policy.
data "aws_iam_policy_document" "log_delivery" {
  statement {
    sid       = "S3ServerAccessLogDelivery"
    actions   = ["s3:PutObject"]
    resources = ["arn:${local.partition}:s3:::${local.logs_bucket_name}/*"]

    principals {
      type        = "Service"
      identifiers = ["logging.s3.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

locals {
  logs_bucket_name = "${var.name_prefix}-logs-${local.account_id}"

  # The URIs every runner is given; outputs.tf and databricks.tf read them from here.
  input_uri     = "s3://${module.input_bucket.id}/${var.input_prefix}"
  output_prefix = "s3://${module.output_bucket.id}/${var.output_prefix}"
  weights_uri   = "s3://${module.model_bucket.id}/${var.weights_key}"
}
