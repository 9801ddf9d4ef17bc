# Values docs/DEPLOY.md and the job configs under deploy/ take from `terraform output`.

output "region" {
  description = "AWS region of everything created here."
  value       = local.region
}

output "input_bucket" {
  description = "Bucket for the Parquet image files (upload under input_uri)."
  value       = module.input_bucket.id
}

output "output_bucket" {
  description = "Bucket the runners write predictions and _SUCCESS.json manifests to."
  value       = module.output_bucket.id
}

output "model_bucket" {
  description = "Bucket for the ResNet50 weights (--weights s3://<this bucket>/<weights_key>)."
  value       = module.model_bucket.id
}

output "job_env" {
  description = "INPUT_URI, OUTPUT_PREFIX and WEIGHTS_URI for the Anyscale job/schedule env_vars and the `ray job submit` command; GLUE_TABLE, the Glue name the Anyscale job registers its Delta table under."
  value = {
    INPUT_URI     = local.input_uri
    OUTPUT_PREFIX = local.output_prefix
    WEIGHTS_URI   = local.weights_uri
    GLUE_TABLE    = "${var.glue_database}.${var.glue_delta_table}"
  }
}

output "kms_key_arn" {
  description = "KMS key that encrypts the data buckets (pass to SageMaker transform jobs as the output key)."
  value       = aws_kms_key.data.arn
}

output "sagemaker_role_arn" {
  description = "Execution role for SageMaker Batch Transform (python -m runners.sagemaker_job)."
  value       = aws_iam_role.sagemaker.arn
}

output "staging_bucket" {
  description = "Bucket where python -m runners.sagemaker_job stages each run (shards, model.tar.gz, .out objects); unversioned, leftovers expire."
  value       = module.staging_bucket.id
}

output "sagemaker_env" {
  description = "SAGEMAKER_ROLE_ARN, SAGEMAKER_STAGING_URI and AWS_REGION for deploy/sagemaker/nightly.sh (with job_env)."
  value = {
    SAGEMAKER_ROLE_ARN    = aws_iam_role.sagemaker.arn
    SAGEMAKER_STAGING_URI = local.sagemaker_staging_uri
    AWS_REGION            = local.region
  }
}

output "sagemaker_runner_policy_arn" {
  description = "Managed policy for whatever runs python -m runners.sagemaker_job (the nightly's machine role or user); attach it with job_data_policy_arn."
  value       = aws_iam_policy.sagemaker_runner.arn
}

output "job_data_policy_arn" {
  description = "Managed policy with exactly the job's S3 and KMS access; attach it to your Anyscale cloud's instance role."
  value       = aws_iam_policy.job_data.arn
}

output "nodes_instance_profile_name" {
  description = "Instance profile for Ray workers (deploy/ray/cluster.yaml) and Databricks nodes."
  value       = aws_iam_instance_profile.nodes.name
}

output "nodes_instance_profile_arn" {
  description = "ARN of the nodes instance profile (Anyscale advanced_instance_config, Databricks)."
  value       = aws_iam_instance_profile.nodes.arn
}

output "ray_head_instance_profile_name" {
  description = "Instance profile for the Ray head node (deploy/ray/cluster.yaml)."
  value       = aws_iam_instance_profile.ray_head.name
}

output "databricks_wheel_path" {
  description = "Where to upload the project wheel the nightly Databricks job installs (null when the job is not created here)."
  value       = local.wheel_path
}

output "databricks_job_id" {
  description = "Id of the nightly Databricks job (null when the job is not created here); `databricks jobs run-now <id>` runs it once."
  value       = one(databricks_job.nightly_spark[*].id)
}

output "databricks_job_url" {
  description = "Link to the nightly Databricks job in the workspace (null when the job is not created here)."
  value       = one(databricks_job.nightly_spark[*].url)
}

output "glue_database" {
  description = "Glue database for --iceberg-catalog glue: pass --iceberg-table <this>.<table>."
  value       = aws_glue_catalog_database.tables.name
}

output "glue_commit_policy_arn" {
  description = "The Glue calls a nightly Iceberg commit or a --glue-table registration makes; attached to the Ray head, included in sagemaker_runner. Attach it to whatever else runs a driver (the Anyscale cloud's instance role)."
  value       = aws_iam_policy.glue_commit.arn
}

output "databricks_external_location_url" {
  description = "Unity Catalog external location over the output prefix (null without Databricks): the bundle's output_prefix must lie in it."
  value       = one(databricks_external_location.output[*].url)
}

output "databricks_schema" {
  description = "The Unity Catalog schema (catalog.schema) the nightly table is registered in (null without Databricks): the bundle's table_name is <this>.<table>."
  value       = one(databricks_schema.predictions[*].id)
}
