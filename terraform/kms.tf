# The customer managed key that encrypts the input, output and model buckets. Roles get
# kms:Decrypt / kms:GenerateDataKey on this key only (see iam_*.tf).

resource "aws_kms_key" "data" {
  description             = "${var.name_prefix}: default encryption of the input, output and model buckets"
  enable_key_rotation     = true
  deletion_window_in_days = 30

  # The account root statement hands key access to IAM, so the role policies alone decide
  # who may use the key. In a key policy "Resource": "*" means this key, not every key.
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "AccountAdministersKeyThroughIam"
      Effect    = "Allow"
      Principal = { AWS = "arn:${local.partition}:iam::${local.account_id}:root" }
      Action    = "kms:*"
      Resource  = "*"
    }]
  })
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.name_prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}
