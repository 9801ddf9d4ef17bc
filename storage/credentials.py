"""Refuse to start an S3 job without credentials, before any work is scheduled.

pyarrow's S3 client would otherwise send unsigned requests and fail deep inside a worker.
botocore walks the same chain as the AWS C++ SDK under pyarrow (environment, profiles,
web identity, container and instance metadata), so its answer is the one that matters.
"""

from __future__ import annotations

from storage.errors import StorageError


def require_credentials(uri: str) -> None:
    """Raise ``StorageError`` if the standard AWS credential chain finds nothing."""
    try:
        import botocore.session
    except ImportError as e:  # botocore is a core dependency; a broken install says so
        raise StorageError(f"{uri}: botocore is not installed; pip install botocore to use S3") from e
    if botocore.session.get_session().get_credentials() is None:
        raise StorageError(
            f"{uri}: no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or run on a node with an instance role"
        )
