# SageMaker Batch Transform: the serving image the execution role may pull, and the bucket
# where `python -m runners.sagemaker_job` stages each run.
#
# No SageMaker model here. The runner builds model.tar.gz per run (the job's weights, options
# and code), uploads it to the run's staging prefix and creates a model of its own for the
# run, which it deletes afterwards (runners/sagemaker/aws.py). A model in this configuration
# would need an archive in S3 before it can be created (CreateModel refuses a missing one), and
# any archive uploaded here would go stale with the next change of weights or code.

# The region's AWS Deep Learning Container "pytorch-inference" image: the one the runner uses
# (runners/sagemaker/container.py; tests/deploy holds the tags equal). Its registry account is
# what the execution role may pull from.
data "aws_sagemaker_prebuilt_ecr_image" "pytorch_inference" {
  repository_name = "pytorch-inference"
  image_tag       = var.sagemaker_pytorch_image_tag
}

# Each run copies its input into <staging>/sagemaker-<run id>/ as shards and deletes them when
# it is done. In the versioned output bucket every deleted copy would stay as a noncurrent
# version for noncurrent_version_expiration_days: about that many nights of input. This bucket
# keeps no versions, and expires whatever a killed run left behind.
module "staging_bucket" {
  #checkov:skip=CKV_AWS_21:Staging holds per-run copies the runner deletes; versions would keep every deleted copy of the input.
  source                             = "./modules/s3_bucket"
  name                               = "${var.name_prefix}-staging-${local.account_id}"
  kms_key_arn                        = aws_kms_key.data.arn
  access_log_bucket                  = module.logs_bucket.id
  versioned                          = false
  expiration_days                    = var.staging_expiration_days
  abort_incomplete_multipart_days    = var.abort_incomplete_multipart_days
  noncurrent_version_expiration_days = 1
}

locals {
  # --staging-s3-uri of the scheduled SageMaker run (deploy/sagemaker/nightly.sh).
  sagemaker_staging_uri = "s3://${module.staging_bucket.id}/"
  # The runner stages each run under <staging>/sagemaker-<run id>/ (runners/sagemaker_job.py:
  # staging_location) and names the run's model and transform job sbi-<run id> (aws.job_name).
  sagemaker_run_prefix = "sagemaker-*"
  sagemaker_run_name   = "sbi-*"
}
