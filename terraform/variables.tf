# Inputs. Every default is a working choice; override in a *.tfvars file (see example.tfvars).

variable "region" {
  description = "AWS region for the buckets and roles. Run the jobs (and SageMaker's transform jobs) in the same region to avoid cross-region transfer charges."
  type        = string
  default     = "us-west-2"
}

variable "name_prefix" {
  description = "Prefix of every resource name. Bucket names are <name_prefix>-<input|output|model|logs>-<account id>, so keep it short, lowercase and DNS-safe."
  type        = string
  default     = "batch-inference"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,30}$", var.name_prefix))
    error_message = "name_prefix must be 3-31 characters of lowercase letters, digits and hyphens, starting with a letter (it becomes part of S3 bucket names)."
  }
}

variable "tags" {
  description = "Extra tags applied to every AWS resource (cost allocation, owner)."
  type        = map(string)
  default     = {}
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which unfinished multipart uploads are aborted. A killed writer leaves invisible parts that are billed until aborted."
  type        = number
  default     = 7
}

variable "noncurrent_version_expiration_days" {
  description = "Days a replaced object version is kept. Versioning protects against a bad overwrite; expiring old versions keeps nightly re-runs from growing the bill."
  type        = number
  default     = 30
}

variable "staging_expiration_days" {
  description = "Days after which objects in the SageMaker staging bucket expire. A finished run deletes its own staging; this removes what a killed run left behind. Keep it longer than a run."
  type        = number
  default     = 7
}

variable "access_log_expiration_days" {
  description = "Days S3 server access logs are kept in the logs bucket."
  type        = number
  default     = 90
}

variable "input_prefix" {
  description = "Key prefix of the Parquet image files inside the input bucket."
  type        = string
  default     = "images/"
}

variable "output_prefix" {
  description = "Key prefix under which each nightly run writes <prefix><YYYY-MM-DD>/ in the output bucket."
  type        = string
  default     = "preds/"
}

variable "weights_key" {
  description = "Key of the ResNet50 weights file (torch state dict) in the model bucket, passed to the runners as --weights."
  type        = string
  default     = "resnet50.pt"
}

variable "sagemaker_pytorch_image_tag" {
  description = "Tag of the AWS Deep Learning Container 'pytorch-inference' image the runner's SageMaker models use (torch 2.6, Python 3.12: runners/sagemaker/container.py, which builds the archive's wheels for it); the execution role may pull it from the registry account the provider looks up for the region. Use a -gpu- tag for GPU transform instances."
  type        = string
  default     = "2.6.0-gpu-py312"
}

variable "ray_cluster_name" {
  description = "cluster_name in deploy/ray/cluster.yaml. The Ray head may only start, stop and terminate instances carrying this ray-cluster-name tag."
  type        = string
  default     = "batch-inference"
}

variable "ray_ami_ssm_parameter" {
  description = "Public SSM parameter that deploy/ray/cluster.yaml's ImageId resolves (resolve:ssm:...): the current Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) of the region, with an NVIDIA driver for CUDA 12 and Docker with the NVIDIA container toolkit."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
}

variable "nightly_quartz_cron" {
  description = "When the Databricks job runs (Quartz syntax: sec min hour day-of-month month day-of-week). Default 02:00 every day, the same hour as the Anyscale schedule."
  type        = string
  default     = "0 0 2 * * ?"
}

variable "nightly_timezone" {
  description = "Java time zone id in which nightly_quartz_cron is read."
  type        = string
  default     = "UTC"
}

variable "enable_databricks" {
  description = "Register the nodes instance profile in the Databricks workspace (needs DATABRICKS_HOST and credentials). Set false when you have no Databricks workspace."
  type        = bool
  default     = true
}

variable "create_databricks_job" {
  description = "Also create the nightly Databricks job here (needs enable_databricks). Set false when you deploy deploy/databricks/databricks.yml instead, so the job is not scheduled twice."
  type        = bool
  default     = true
}

variable "databricks_spark_version" {
  description = "Databricks Runtime for the job cluster. A GPU ML runtime ships CUDA, torch and torchvision, so only the project wheel is installed on top."
  type        = string
  default     = "17.3.x-gpu-ml-scala2.13"
}

variable "databricks_gpu_node_type" {
  description = "AWS instance type of the Databricks driver and workers (one NVIDIA A10G on g5.xlarge)."
  type        = string
  default     = "g5.xlarge"
}

variable "databricks_num_workers" {
  description = "GPU workers in the Databricks job cluster; one Spark executor, and so one model copy, per worker."
  type        = number
  default     = 2
}

variable "databricks_wheel_path" {
  description = "Workspace path (/Workspace/Users/..., or a Unity Catalog volume /Volumes/...) of the project wheel (`python -m pip wheel --no-deps -w dist .`, then `databricks workspace import`). Installed on the job cluster as a library. Default: <your workspace home>/<name_prefix>/streaming_batch_inference-0.1.0-py3-none-any.whl (terraform output databricks_wheel_path). Never /Workspace/Shared: every workspace user may write there, and the job runs this code with the nodes instance profile."
  type        = string
  default     = null

  validation {
    condition     = var.databricks_wheel_path == null || !can(regex("^(/Workspace)?/Shared/", coalesce(var.databricks_wheel_path, "-")))
    error_message = "databricks_wheel_path must not be under /Workspace/Shared/: every workspace user can replace a file there, and the job runs it with the nodes instance profile. Use your home (/Workspace/Users/<you>/...) or a Unity Catalog volume."
  }
}

variable "glue_database" {
  description = "Glue database of the Iceberg tables a run with --iceberg-catalog glue commits (--iceberg-table <this>.<table>), and of the Delta table the Anyscale job registers (--glue-table <this>.<glue_delta_table>). Lower-case letters, digits and _: the names Athena reads."
  type        = string
  default     = "batch_inference"

  validation {
    condition     = can(regex("^[a-z0-9_]{1,255}$", var.glue_database))
    error_message = "glue_database must be lower-case letters, digits and _ (Athena reads no other names; --iceberg-table refuses them too)."
  }
}

variable "databricks_catalog" {
  description = "Unity Catalog catalog of the schema the nightly table is registered in (it must exist; the deploying identity needs USE_CATALOG and CREATE_SCHEMA on it). The bundle's table_name starts with it."
  type        = string
  default     = "main"
}

variable "databricks_schema" {
  description = "Schema created in databricks_catalog for the nightly table (the bundle's table_name is <catalog>.<this>.<table>)."
  type        = string
  default     = "batch_inference"

  validation {
    condition     = can(regex("^[a-z_][a-z0-9_]*$", var.databricks_schema))
    error_message = "databricks_schema must be lower-case letters, digits and _, not starting with a digit: register_table writes the name unquoted."
  }
}

variable "databricks_table_readers" {
  description = "Groups, users or service principals (application ids) that may read the tables of databricks_schema: USE_SCHEMA and SELECT on the schema (they need USE_CATALOG on databricks_catalog too, which its owner grants). Empty: only the owner (the deploying identity) and admins."
  type        = list(string)
  default     = []
}

variable "databricks_job_principal" {
  description = "The identity the Databricks job runs as (a service principal's application id) when it is not the deploying identity: it gets what register_table needs in the schema and the output's external location (USE_SCHEMA, CREATE_TABLE, CREATE_EXTERNAL_TABLE; USE_CATALOG on databricks_catalog is its owner's to grant), and owns the table it creates. Null: the job runs as the deploying identity, which owns the schema and the location."
  type        = string
  default     = null
}

variable "glue_delta_table" {
  description = "Name in glue_database under which the Anyscale job registers its Delta table after each night (--glue-table, GLUE_TABLE of terraform output job_env), so Athena finds it."
  type        = string
  default     = "predictions"

  validation {
    condition     = can(regex("^[a-z0-9_]{1,255}$", var.glue_delta_table))
    error_message = "glue_delta_table must be lower-case letters, digits and _ (Athena reads no other names; --glue-table refuses them too)."
  }
}
