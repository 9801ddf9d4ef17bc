# The SageMaker model Batch Transform jobs run: the AWS PyTorch inference container of this
# region, with the ResNet50 archive (weights + code/<sagemaker_program>) from the model bucket.

data "aws_sagemaker_prebuilt_ecr_image" "pytorch_inference" {
  repository_name = "pytorch-inference"
  image_tag       = var.sagemaker_pytorch_image_tag
}

resource "aws_sagemaker_model" "resnet50" {
  name               = "${var.name_prefix}-resnet50"
  execution_role_arn = aws_iam_role.sagemaker.arn
  # The container needs no network: Batch Transform streams input and output for it.
  enable_network_isolation = true

  primary_container {
    image          = data.aws_sagemaker_prebuilt_ecr_image.pytorch_inference.registry_path
    model_data_url = local.model_data

    environment = {
      SAGEMAKER_PROGRAM          = var.sagemaker_program
      SAGEMAKER_SUBMIT_DIRECTORY = "/opt/ml/model/code"
    }
  }

  # The role's policy must exist before SageMaker checks it can read model.tar.gz.
  depends_on = [aws_iam_role_policy.sagemaker]
}
