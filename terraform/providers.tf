# Provider settings and the account facts (id, partition, region) other files build ARNs from.

provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ project = var.name_prefix }, var.tags)
  }
}

# Workspace-level provider. Credentials come from the environment (DATABRICKS_HOST plus
# DATABRICKS_TOKEN, or a ~/.databrickscfg profile) so no secret is ever written in a .tf file.
provider "databricks" {}

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_region" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  partition  = data.aws_partition.current.partition
  region     = data.aws_region.current.region
}
