# The three data buckets the jobs use. Each one is the module in modules/s3_bucket:
# KMS-encrypted, public access blocked, versioned, TLS-only, access-logged.

module "input_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-input-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = aws_s3_bucket.logs.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

module "output_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-output-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = aws_s3_bucket.logs.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

module "model_bucket" {
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-model-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = aws_s3_bucket.logs.id
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = var.noncurrent_version_expiration_days
}

locals {
  # The URIs every runner is given; outputs.tf and databricks.tf read them from here.
  input_uri     = "s3://${module.input_bucket.id}/${var.input_prefix}"
  output_prefix = "s3://${module.output_bucket.id}/${var.output_prefix}"
  weights_uri   = "s3://${module.model_bucket.id}/${var.weights_key}"
  model_data    = "s3://${module.model_bucket.id}/model.tar.gz"
}
