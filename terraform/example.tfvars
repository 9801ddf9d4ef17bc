# Example overrides: copy to terraform.tfvars and edit. Every variable has a working default.
region                = "us-west-2"
name_prefix           = "batch-inference"
enable_databricks     = true
create_databricks_job = true
databricks_wheel_path = "/Workspace/Shared/batch-inference/streaming_batch_inference-0.1.0-py3-none-any.whl"
tags = {
  owner = "ml-platform"
}
