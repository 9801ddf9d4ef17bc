# The Glue database that `--table-format iceberg --iceberg-catalog glue --iceberg-table <database>.<table>`
# registers its Iceberg table in, and that the Ray job's `--table-format delta --glue-table
# <database>.<table>` registers its Delta table in after the night's commit (Athena, EMR and Spark's
# Glue catalog then find either by name), and the only Glue calls the driver makes: through
# pyiceberg's GlueCatalog (job/output/formats/iceberg_glue.py), GetDatabase (the database exists),
# GetTable (the table's current version), CreateTable (the first night: the table and its first
# snapshot), UpdateTable (every later night, conditioned on Glue's VersionId) and DeleteTable
# (--overwrite only: the entry of a table whose files it cleared is dropped and made again); for a
# Delta table (runners/ray/glue.py), GetDatabase, GetTable, CreateTable (the first night) and
# UpdateTable (a night whose columns changed). The driver commits, so the roles the driver runs
# under get them: the Ray head, and the SageMaker runner's policy (the Batch Transform execution
# role only predicts; the Ray workers and Databricks nodes never commit).

resource "aws_glue_catalog_database" "tables" {
  name        = var.glue_database
  description = "Tables the nightly batch inference of ${var.name_prefix} commits (Iceberg, --iceberg-catalog glue) or registers (Delta, --glue-table)."
  # Tables created without a location default under here: the job always passes --output, so this is a hint.
  location_uri = "s3://${module.output_bucket.id}/${var.output_prefix}"
}

data "aws_iam_policy_document" "glue_commit" {
  statement {
    # Glue checks the catalog, the database and the table ARN of each call: all three are named.
    sid = "CommitTablesOfOwnDatabase"
    actions = [
      "glue:GetDatabase",
      "glue:GetTable",
      "glue:CreateTable",
      "glue:UpdateTable",
      "glue:DeleteTable",
    ]
    resources = [
      "arn:${local.partition}:glue:${local.region}:${local.account_id}:catalog",
      "arn:${local.partition}:glue:${local.region}:${local.account_id}:database/${var.glue_database}",
      "arn:${local.partition}:glue:${local.region}:${local.account_id}:table/${var.glue_database}/*",
    ]
  }
}

resource "aws_iam_policy" "glue_commit" {
  name        = "${var.name_prefix}-glue-commit"
  description = "Commit the nightly Iceberg tables of ${var.name_prefix} in Glue database ${var.glue_database}, and nothing else in Glue."
  policy      = data.aws_iam_policy_document.glue_commit.json
}

resource "aws_iam_role_policy_attachment" "ray_head_glue_commit" {
  role       = aws_iam_role.ray_head.name
  policy_arn = aws_iam_policy.glue_commit.arn
}
