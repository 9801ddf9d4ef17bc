# Inputs of the data bucket module.

variable "name" {
  description = "Globally unique bucket name."
  type        = string
}

variable "kms_key_arn" {
  description = "ARN of the customer managed KMS key that encrypts every object by default; null for SSE-S3 (an access-log target must use SSE-S3)."
  type        = string
}

variable "access_log_bucket" {
  description = "Name of the bucket that receives this bucket's S3 server access logs (under <name>/); null for the log bucket itself."
  type        = string
}

variable "expiration_days" {
  description = "Days after which current objects expire; null keeps them (data buckets)."
  type        = number
  default     = null
}

variable "extra_policy_documents" {
  description = "Bucket policy JSON documents merged with the TLS-only statement (e.g. log delivery)."
  type        = list(string)
  default     = []
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which unfinished multipart uploads are aborted."
  type        = number
}

variable "noncurrent_version_expiration_days" {
  description = "Days a replaced object version is kept before it expires."
  type        = number
}

variable "versioned" {
  description = "Keep replaced and deleted objects as noncurrent versions (data buckets). False for a bucket of temporaries that are deleted on purpose, where versions would only keep every deleted copy."
  type        = bool
  default     = true
}
