# Unity Catalog's way into the output prefix: a storage credential (an IAM role Unity Catalog
# assumes) and an external location over the prefix the nightly job commits its Delta table to.
# The bundle's register_table task (deploy/databricks/register_table.py) runs
# `CREATE TABLE IF NOT EXISTS <catalog.schema.table> USING DELTA LOCATION '<output prefix>'`, which
# Unity Catalog allows only inside an external location: this one. Its owner is the deploying
# identity, which the job runs as, so the job may create the table; grant others with databricks_grants.
# Read-only: the job writes the table through the nodes instance profile (delta-rs on the driver);
# Unity Catalog only reads it for its readers.

locals {
  # By name: the role's trust policy needs the credential's external id, the credential the role's ARN.
  unity_catalog_role_name = "${var.name_prefix}-unity-catalog"
}

resource "databricks_storage_credential" "output" {
  count     = local.databricks_count
  name      = "${var.name_prefix}-output"
  comment   = "Reads the nightly predictions table of ${var.name_prefix} (the job writes it)."
  read_only = true

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
  description        = "Unity Catalog reads the nightly predictions table of ${var.name_prefix}."
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
    sid       = "DecryptWithBucketKey"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.data.arn]
  }
}

resource "aws_iam_role_policy" "unity_catalog" {
  count  = local.databricks_count
  name   = "read-output-prefix"
  role   = aws_iam_role.unity_catalog[0].id
  policy = data.aws_iam_policy_document.unity_catalog_output.json
}

resource "databricks_external_location" "output" {
  count           = local.databricks_count
  name            = "${var.name_prefix}-output"
  url             = local.output_prefix
  credential_name = databricks_storage_credential.output[0].name
  read_only       = true
  comment         = "The nightly predictions table of ${var.name_prefix}: register_table's CREATE TABLE ... LOCATION lies here."
  # Databricks checks the credential when the location is made: the role's policy must exist by then.
  depends_on = [aws_iam_role_policy.unity_catalog]
}
