# Example overrides: copy to terraform.tfvars and edit. Every variable has a working default.
region                = "us-west-2"
name_prefix           = "batch-inference"
enable_databricks     = true
create_databricks_job = true
# databricks_wheel_path defaults to your workspace home; never /Workspace/Shared (anyone may write there).
tags = {
  owner = "ml-platform"
}
