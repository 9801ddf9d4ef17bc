# Unity Catalog's way into the output prefix, and the schema the nightly table is registered in:
# a storage credential (an IAM role Unity Catalog assumes), an external location over the prefix
# the nightly job commits its Delta table to, the schema, and the grants that let the job register
# the table and its readers read it. The bundle's register_table task
# (deploy/databricks/register_table.py) runs `CREATE TABLE IF NOT EXISTS <catalog.schema.table>
# USING DELTA LOCATION '<output prefix>'`, which Unity Catalog allows only in a schema that exists
# and inside an external location that is not read-only: these. Their owner is the deploying
# identity; a job that runs as another identity (databricks_job_principal) is granted what the
# registration needs. Unity Catalog reads and writes the prefix: Databricks users maintain the table
# through it (OPTIMIZE, VACUUM, a DELETE for a privacy request), as other writers the job expects.

locals {
  # The identity the job runs as, when it is not the deploying identity (who owns everything here).
  databricks_job_principals = var.databricks_job_principal == null ? [] : [var.databricks_job_principal]
  # databricks_grants needs one grant at least: none when nobody but the owner uses the schema.
  schema_grants_count = var.enable_databricks && length(concat(var.databricks_table_readers, local.databricks_job_principals)) > 0 ? 1 : 0
  # By name: the role's trust policy needs the credential's external id, the credential the role's ARN.
  unity_catalog_role_name = "${var.name_prefix}-unity-catalog"
}

resource "databricks_storage_credential" "output" {
  count     = local.databricks_count
  name      = "${var.name_prefix}-output"
  comment   = "The nightly predictions table of ${var.name_prefix}: registered, read and maintained through Unity Catalog."
  read_only = false

  aws_iam_role {
    role_arn = "arn:${local.partition}:iam::${local.account_id}:role/${local.unity_catalog_role_name}"
  }
}

# Unity Catalog's own trust policy: Databricks' role assumes ours with the credential's external id.
data "databricks_aws_unity_catalog_assume_role_policy" "output" {
  count          = local.databricks_count
  aws_account_id = local.account_id
  role_name      = local.unity_catalog_role_name
  external_id    = databricks_storage_credential.output[0].aws_iam_role[0].external_id
}

resource "aws_iam_role" "unity_catalog" {
  count              = local.databricks_count
  name               = local.unity_catalog_role_name
  description        = "Unity Catalog reads and maintains the nightly predictions table of ${var.name_prefix}."
  assume_role_policy = data.databricks_aws_unity_catalog_assume_role_policy.output[0].json
}

data "aws_iam_policy_document" "unity_catalog_output" {
  statement {
    sid       = "ListOutputBucket"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [module.output_bucket.arn]
  }

  statement {
    sid       = "ReadOutputPrefix"
    actions   = ["s3:GetObject"]
    resources = ["${module.output_bucket.arn}/${var.output_prefix}*"]
  }

  statement {
    # OPTIMIZE, VACUUM and DELETE through Unity Catalog write and delete files of the table: under
    # the output prefix only, nothing else of the output bucket.
    sid       = "MaintainOutputPrefix"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${module.output_bucket.arn}/${var.output_prefix}*"]
  }

  statement {
    sid       = "UseBucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]
  }
}

resource "aws_iam_role_policy" "unity_catalog" {
  count  = local.databricks_count
  name   = "output-prefix-table"
  role   = aws_iam_role.unity_catalog[0].id
  policy = data.aws_iam_policy_document.unity_catalog_output.json
}

resource "databricks_external_location" "output" {
  count           = local.databricks_count
  name            = "${var.name_prefix}-output"
  url             = local.output_prefix
  credential_name = databricks_storage_credential.output[0].name
  # Not read-only: Unity Catalog creates no table on a read-only location (register_table's CREATE TABLE).
  read_only = false
  comment   = "The nightly predictions table of ${var.name_prefix}: register_table's CREATE TABLE ... LOCATION lies here."
  # Databricks checks the credential when the location is made: the role's policy must exist by then.
  depends_on = [aws_iam_role_policy.unity_catalog]
}

# The schema register_table creates the table in: CREATE TABLE fails in a schema that does not exist.
resource "databricks_schema" "predictions" {
  count        = local.databricks_count
  catalog_name = var.databricks_catalog
  name         = var.databricks_schema
  comment      = "Tables the nightly batch inference of ${var.name_prefix} registers (an external Delta table over its output prefix)."
}

# What each identity may do in the schema, authoritatively: readers read every table in it; the job
# (when it is not the deploying identity, which owns the schema) creates its table there, and owns it then.
# Reaching the schema also takes USE_CATALOG on its catalog, which is not ours: no grant is managed on it,
# since Terraform's grants on a securable replace what a principal holds there (the main catalog usually
# grants USE_CATALOG to all account users; elsewhere the catalog's owner grants it).
resource "databricks_grants" "predictions_schema" {
  count  = local.schema_grants_count
  schema = databricks_schema.predictions[0].id

  dynamic "grant" {
    for_each = toset(var.databricks_table_readers)
    content {
      principal  = grant.value
      privileges = ["USE_SCHEMA", "SELECT"]
    }
  }

  dynamic "grant" {
    for_each = local.databricks_job_principals
    content {
      principal  = grant.value
      privileges = ["USE_SCHEMA", "CREATE_TABLE"]
    }
  }
}

# The job's identity creates the external table over the output prefix, which lies in this location.
resource "databricks_grants" "output_location" {
  count             = var.enable_databricks && var.databricks_job_principal != null ? 1 : 0
  external_location = databricks_external_location.output[0].id

  grant {
    principal  = var.databricks_job_principal
    privileges = ["CREATE_EXTERNAL_TABLE", "READ_FILES"]
  }
}
