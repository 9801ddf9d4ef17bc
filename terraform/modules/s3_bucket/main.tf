# One private bucket as the project needs it: encrypted (KMS, or SSE-S3 for the log bucket),
# public access blocked, versioned (unless told otherwise), TLS-only, access-logged, and cleaned
# of abandoned multipart uploads. Used for the input, output, model and logs buckets
# (../../buckets.tf) and the SageMaker staging bucket (../../sagemaker.tf).

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_144:Cross-region replication doubles storage cost; inputs are re-creatable and outputs are re-run nightly. Enable per bucket where a DR copy is required.
  #checkov:skip=CKV2_AWS_62:Nothing consumes bucket events; the jobs are scheduled (cron), not event-driven.
  bucket = var.name
}

resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  # ACLs off: access is decided by IAM and the bucket policy alone.
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket                  = aws_s3_bucket.this.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_versioning" "this" {
  count  = var.versioned ? 1 : 0
  bucket = aws_s3_bucket.this.id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    # One data key per bucket instead of per object: far fewer KMS calls for millions of images.
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"
    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }
  }

  dynamic "rule" {
    for_each = var.expiration_days == null ? [] : [var.expiration_days]

    content {
      id     = "expire-objects"
      status = "Enabled"
      filter {}

      expiration {
        days = rule.value
      }

      # Repeats the first rule's abort: checkov's CKV_AWS_300 fails a dynamic rule without it.
      abort_incomplete_multipart_upload {
        days_after_initiation = var.abort_incomplete_multipart_days
      }
    }
  }

  # Lifecycle rules on an unversioned bucket behave differently; apply after versioning.
  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_logging" "this" {
  count         = var.access_log_bucket == null ? 0 : 1
  bucket        = aws_s3_bucket.this.id
  target_bucket = var.access_log_bucket
  target_prefix = "${var.name}/"
}

data "aws_iam_policy_document" "this" {
  source_policy_documents = var.extra_policy_documents

  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.this.arn,
      "${aws_s3_bucket.this.arn}/*",
    ]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = data.aws_iam_policy_document.this.json

  # A bucket policy is refused while the public access block is still being applied.
  depends_on = [aws_s3_bucket_public_access_block.this]
}
