# Roles for the machines that run the Ray and Spark jobs on EC2:
#   nodes    - Ray workers and Databricks cluster nodes: read input and weights, write output.
#   ray_head - the Ray head: the same data access (the driver lists input and writes the
#              manifest) plus what the Ray autoscaler needs to launch and stop its workers.

data "aws_iam_policy_document" "ec2_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "job_data" {
  statement {
    sid     = "ListProjectBuckets"
    actions = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [
      module.input_bucket.arn,
      module.output_bucket.arn,
      module.model_bucket.arn,
    ]
  }

  statement {
    sid     = "ReadInputWeightsAndOwnOutput"
    actions = ["s3:GetObject"]
    resources = [
      "${module.input_bucket.arn}/*",
      "${module.model_bucket.arn}/*",
      "${module.output_bucket.arn}/*",
    ]
  }

  statement {
    # DeleteObject: --overwrite replaces a run's files; the commit step clears its staging.
    sid       = "WriteOutput"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${module.output_bucket.arn}/*"]
  }

  statement {
    sid       = "UseBucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]
  }
}

resource "aws_iam_policy" "job_data" {
  name        = "${var.name_prefix}-job-data"
  description = "Read the input and model buckets, write the output bucket of ${var.name_prefix}."
  policy      = data.aws_iam_policy_document.job_data.json
}

resource "aws_iam_role" "nodes" {
  name               = "${var.name_prefix}-nodes"
  description        = "Ray workers and Databricks cluster nodes of ${var.name_prefix}."
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy_attachment" "nodes_data" {
  role       = aws_iam_role.nodes.name
  policy_arn = aws_iam_policy.job_data.arn
}

resource "aws_iam_instance_profile" "nodes" {
  name = "${var.name_prefix}-nodes"
  role = aws_iam_role.nodes.name
}

# What the Ray autoscaler on the head calls (ray/autoscaler/_private/aws/node_provider.py).
data "aws_iam_policy_document" "ray_autoscaler" {
  statement {
    # EC2 Describe* calls do not support resource-level permissions: AWS requires "*".
    sid = "DescribeForScheduling"
    actions = [
      "ec2:DescribeInstances",
      "ec2:DescribeInstanceTypes",
      "ec2:DescribeImages",
      "ec2:DescribeSubnets",
      "ec2:DescribeSecurityGroups",
      "ec2:DescribeKeyPairs",
    ]
    resources = ["*"]
  }

  statement {
    sid     = "LaunchWorkersInThisRegion"
    actions = ["ec2:RunInstances"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:instance/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:volume/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:network-interface/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:subnet/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:security-group/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:key-pair/*",
      "arn:${local.partition}:ec2:${local.region}::image/*",
    ]
  }

  statement {
    # deploy/ray/cluster.yaml's ImageId is resolve:ssm:<this public parameter>: RunInstances
    # resolves it to the region's current Deep Learning Base AMI as the caller.
    sid       = "ResolveDeepLearningAmi"
    actions   = ["ssm:GetParameters", "ssm:GetParameter"]
    resources = ["arn:${local.partition}:ssm:${local.region}::parameter${var.ray_ami_ssm_parameter}"]
  }

  statement {
    sid     = "TagAtLaunch"
    actions = ["ec2:CreateTags"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:instance/*",
      "arn:${local.partition}:ec2:${local.region}:${local.account_id}:volume/*",
    ]

    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["RunInstances"]
    }
  }

  statement {
    # Only instances of this cluster: Ray tags every node it launches with ray-cluster-name.
    sid = "ManageOwnClusterNodes"
    actions = [
      "ec2:CreateTags",
      "ec2:StartInstances",
      "ec2:StopInstances",
      "ec2:TerminateInstances",
    ]
    resources = ["arn:${local.partition}:ec2:${local.region}:${local.account_id}:instance/*"]

    condition {
      test     = "StringEquals"
      variable = "ec2:ResourceTag/ray-cluster-name"
      values   = [var.ray_cluster_name]
    }
  }

  statement {
    sid       = "GiveWorkersTheNodesRole"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.nodes.arn]

    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_policy" "ray_autoscaler" {
  name        = "${var.name_prefix}-ray-autoscaler"
  description = "Lets the Ray head of cluster ${var.ray_cluster_name} launch, tag, stop and terminate its own workers."
  policy      = data.aws_iam_policy_document.ray_autoscaler.json
}

resource "aws_iam_role" "ray_head" {
  name               = "${var.name_prefix}-ray-head"
  description        = "Ray head node of ${var.name_prefix}: job data plus the autoscaler."
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy_attachment" "ray_head_data" {
  role       = aws_iam_role.ray_head.name
  policy_arn = aws_iam_policy.job_data.arn
}

resource "aws_iam_role_policy_attachment" "ray_head_autoscaler" {
  role       = aws_iam_role.ray_head.name
  policy_arn = aws_iam_policy.ray_autoscaler.arn
}

resource "aws_iam_instance_profile" "ray_head" {
  name = "${var.name_prefix}-ray-head"
  role = aws_iam_role.ray_head.name
}
