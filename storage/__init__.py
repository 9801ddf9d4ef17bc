"""URIs -> pyarrow filesystems, with S3 errors turned into one-line answers.

Every engine and the model loader reach data through ``resolve``: ``s3://bucket/key`` (AWS,
or any S3-compatible store through an endpoint URL; ``S3://`` and Hadoop's ``s3a://`` are read as
``s3://``, see ``normalise``) or a local path. No engine imports here.
"""

from storage.errors import StorageError, storage_errors
from storage.resolve import Location, has_credentials, normalise, redact, require_bucket, resolve, within

__all__ = ["Location", "StorageError", "has_credentials", "normalise", "redact", "require_bucket", "resolve", "storage_errors", "within"]
