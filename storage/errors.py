"""Turn pyarrow/AWS SDK exceptions into ``StorageError`` lines that name the fix."""

from __future__ import annotations

import contextlib
import errno
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

# What is left of a 503 once the SDK's retries (storage.resolve.S3_MAX_ATTEMPTS) ran out.
_UNAVAILABLE = (
    "S3 answered 503 (SlowDown / unavailable) to every retry: the store is throttling or down; "
    "run again later (or raise AWS_MAX_ATTEMPTS)"
)
# (substring of the SDK's message, what it means and what to do). First match wins.
_HINTS = [
    ("NoSuchBucket", "the bucket does not exist: create it or fix the URI"),
    ("allow_bucket_creation", "the bucket does not exist: create it or fix the URI"),
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

# A local filesystem's refusals by errno (Python's and pyarrow's OSErrors carry it): what it means and what to do.
# Root is refused too where permission bits do not decide (a read-only mount, /sys, /proc).
_NO_FOLDER = "a file stands where a folder should be: move the file, or choose another path"
_LOCAL_HINTS = {
    errno.EACCES: "permission denied: this user may not write here; choose another path, or grant it write permission",
    errno.EPERM: "operation not permitted here: choose another path, one this user may write",
    errno.EROFS: "the file system is read-only: choose a path on a writable one",
    errno.ENOTDIR: _NO_FOLDER,
    errno.EEXIST: _NO_FOLDER,  # makedirs met a file where a folder of the path should be
    errno.ENOSPC: "no space left on the device: free some, or choose a path on another one",
}

# Advice in pyarrow's messages about options of its own API that our commands do not have.
_NOT_OURS = ("To create buckets, enable the allow_bucket_creation option.",)

# pyarrow cannot retry a 503 SlowDown whose error body is longer than the byte range it asked
# for: such a read fails at once with this text, whatever the retry strategy. Reads of one small
# column (the id check) ask for such ranges; ``retry_short_range_reads`` retries the whole read.
SHORT_RANGE_FAILURE = "Failed to flush response stream"
SHORT_RANGE_ATTEMPTS = 5  # with 0.1, 0.2, 0.4, 0.8 s between: a throttled prefix gets 1.5 s to recover


class StorageError(RuntimeError):
    """A storage problem the user can fix; the message is one line naming the URI and the fix."""


def explain(uri: str, error: BaseException) -> StorageError:
    """A ``StorageError`` for ``uri`` from a pyarrow/SDK exception, with a hint when one is known."""
    message = " ".join(str(error).split())
    hint = _LOCAL_HINTS.get(getattr(error, "errno", None)) or next((hint for needle, hint in _HINTS if needle in message), None)
    for advice in _NOT_OURS:
        message = message.replace(advice, "").strip()
    return StorageError(f"{uri}: {hint} ({_shorten(message)})" if hint else f"{uri}: {_shorten(message)}")


@contextlib.contextmanager
def storage_errors(uri: str) -> Iterator[None]:
    """Re-raise OSErrors from the block as ``StorageError`` naming ``uri``."""
    try:
        yield
    except StorageError:
        raise
    except OSError as e:
        raise explain(uri, e) from e


def retry_short_range_reads(read: Callable[[], T], attempts: int = SHORT_RANGE_ATTEMPTS) -> T:
    """``read()``, run again with backoff while it fails as a throttled short ranged GET does.

    ``read`` must be safe to repeat from the start (it re-reads a whole file's column, say).
    """
    for attempt in range(attempts):
        try:
            return read()
        except (OSError, StorageError) as e:  # storage_errors turns the OSError into a StorageError
            if SHORT_RANGE_FAILURE not in str(e) or attempt == attempts - 1:
                raise
            time.sleep(0.1 * 2**attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _shorten(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."
