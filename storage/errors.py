"""Turn pyarrow/AWS SDK exceptions into ``StorageError`` lines that name the fix."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

# What is left of a 503 once the SDK's retries (storage.resolve.S3_MAX_ATTEMPTS) ran out.
_UNAVAILABLE = (
    "S3 answered 503 (SlowDown / unavailable) to every retry: the store is throttling or down; "
    "run again later (or raise AWS_MAX_ATTEMPTS)"
)
# (substring of the SDK's message, what it means and what to do). First match wins.
_HINTS = [
    ("NoSuchBucket", "the bucket does not exist: create it or fix the URI"),
    ("NoSuchKey", "the object does not exist: check the URI"),
    ("InvalidAccessKeyId", "S3 does not know these credentials: check AWS_PROFILE / AWS_ACCESS_KEY_ID"),
    ("SignatureDoesNotMatch", "the secret key does not match: check AWS_SECRET_ACCESS_KEY"),
    ("ACCESS_DENIED", "access denied: the credentials in use may not read/write this bucket"),
    ("AccessDenied", "access denied: the credentials in use may not read/write this bucket"),
    ("Couldn't connect", "cannot reach the S3 endpoint: check --s3-endpoint-url / AWS_ENDPOINT_URL and the network"),
    ("curlCode: 7", "cannot reach the S3 endpoint: check --s3-endpoint-url / AWS_ENDPOINT_URL and the network"),
    ("curlCode: 6", "cannot resolve the S3 endpoint's host: check --s3-endpoint-url / AWS_ENDPOINT_URL"),
    ("curlCode: 28", "the S3 endpoint timed out: check --s3-endpoint-url / AWS_ENDPOINT_URL and the network"),
    ("NETWORK_CONNECTION", "the S3 endpoint dropped the connection on every retry: check it is up, and the network"),
    ("SLOW_DOWN", _UNAVAILABLE),
    ("HTTP status 503", _UNAVAILABLE),
]


class StorageError(RuntimeError):
    """A storage problem the user can fix; the message is one line naming the URI and the fix."""


def explain(uri: str, error: BaseException) -> StorageError:
    """A ``StorageError`` for ``uri`` from a pyarrow/SDK exception, with a hint when one is known."""
    message = " ".join(str(error).split())
    for needle, hint in _HINTS:
        if needle in message:
            return StorageError(f"{uri}: {hint} ({_shorten(message)})")
    return StorageError(f"{uri}: {_shorten(message)}")


@contextlib.contextmanager
def storage_errors(uri: str) -> Iterator[None]:
    """Re-raise OSErrors from the block as ``StorageError`` naming ``uri``."""
    try:
        yield
    except StorageError:
        raise
    except OSError as e:
        raise explain(uri, e) from e


def _shorten(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."
