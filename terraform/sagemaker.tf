# The SageMaker model Batch Transform jobs run: the AWS PyTorch inference container of this
# region, with the archive `python -m runners.sagemaker_job` builds (weights, code/handler.py,
# the wheels the image lacks) from the model bucket. The container variables are the runner's
# (runners/sagemaker/container.py); tests/deploy holds them equal.

data "aws_sagemaker_prebuilt_ecr_image" "pytorch_inference" {
  repository_name = "pytorch-inference"
  image_tag       = var.sagemaker_pytorch_image_tag
}

resource "aws_sagemaker_model" "resnet50" {
  name               = "${var.name_prefix}-resnet50"
  execution_role_arn = aws_iam_role.sagemaker.arn
  # The container needs no network: Batch Transform streams input and output for it, and
  # the archive carries the wheels the image lacks (code/requirements.txt has --no-index).
  enable_network_isolation = true

  primary_container {
    image          = data.aws_sagemaker_prebuilt_ecr_image.pytorch_inference.registry_path
    model_data_url = local.model_data

    environment = {
      # code/handler.py defines model_fn ... output_fn. Not inference.py: that module name
      # is our `inference` package, and the toolkit would fall back to its TorchScript loader.
      SAGEMAKER_PROGRAM          = "handler.py"
      SAGEMAKER_SUBMIT_DIRECTORY = "/opt/ml/model/code"
      # A request without Accept (or */*) gets this instead of the toolkit's application/json.
      SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT = "application/x-parquet"
    }
  }

  # The role's policy must exist before SageMaker checks it can read model.tar.gz.
  depends_on = [aws_iam_role_policy.sagemaker]
}
