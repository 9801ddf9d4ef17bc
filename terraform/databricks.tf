# The nightly Databricks job: `python -m runners.spark_job` on a GPU job cluster whose nodes
# carry the nodes instance profile. deploy/databricks/databricks.yml is the bundle form of
# the same job; deploy one of the two (create_databricks_job = false when using the bundle).

locals {
  databricks_count = var.enable_databricks ? 1 : 0
  job_count        = var.enable_databricks && var.create_databricks_job ? 1 : 0

  # The job's code lives under the deploying identity's home, which only it (and workspace
  # admins) may write: under /Shared any user could change what runs with the instance profile.
  databricks_home = one(data.databricks_current_user.deployer[*].home)
  wheel_path      = local.job_count == 0 ? null : coalesce(var.databricks_wheel_path, "/Workspace${local.databricks_home}/${var.name_prefix}/streaming_batch_inference-0.1.0-py3-none-any.whl")

  # The runner's command line. --incremental: every night updates the one table under the
  # output prefix, running only the input files added or changed since the last run (a retry
  # keeps what it committed).
  spark_job_parameters = [
    "--input", local.input_uri,
    "--output", local.output_prefix,
    "--weights", local.weights_uri,
    "--udf", "iterator",
    "--incremental",
    "--table-format", "delta",
  ]
}

data "databricks_current_user" "deployer" {
  count = local.job_count
}

# Registers the instance profile in the workspace so job clusters may use it. The workspace's
# cross-account role needs iam:PassRole on aws_iam_role.nodes for this to succeed.
resource "databricks_instance_profile" "nodes" {
  count                = local.databricks_count
  instance_profile_arn = aws_iam_instance_profile.nodes.arn
}

# spark_python_task runs a file, not a module: this shim runs `python -m runners.spark_job`.
resource "databricks_workspace_file" "spark_entry" {
  count  = local.job_count
  source = "${path.module}/../deploy/databricks/spark_entry.py"
  path   = "${local.databricks_home}/${var.name_prefix}/spark_entry.py"
}

resource "databricks_job" "nightly_spark" {
  count               = local.job_count
  name                = "${var.name_prefix}-spark-nightly"
  max_concurrent_runs = 1

  job_cluster {
    job_cluster_key = "gpu"

    new_cluster {
      spark_version       = var.databricks_spark_version
      node_type_id        = var.databricks_gpu_node_type
      driver_node_type_id = var.databricks_gpu_node_type
      num_workers         = var.databricks_num_workers
      # Dedicated (single user) access mode: the runner uses spark.sparkContext (parallelize,
      # defaultParallelism), which Standard (shared) access mode refuses. Databricks assigns
      # the job cluster to the identity the job runs as.
      data_security_mode = "SINGLE_USER"

      aws_attributes {
        instance_profile_arn = databricks_instance_profile.nodes[0].id
        availability         = "ON_DEMAND"
        zone_id              = "auto"
      }

      custom_tags = {
        project = var.name_prefix
      }
    }
  }

  task {
    task_key        = "predict"
    job_cluster_key = "gpu"
    max_retries     = 1

    spark_python_task {
      python_file = databricks_workspace_file.spark_entry[0].workspace_path
      parameters  = local.spark_job_parameters
    }

    library {
      whl = local.wheel_path
    }
  }

  schedule {
    quartz_cron_expression = var.nightly_quartz_cron
    timezone_id            = var.nightly_timezone
  }
}
