"""Resolve a URI to a pyarrow filesystem and a path inside it.

Use ``resolve(uri, endpoint_url)`` everywhere data is read or written. S3 goes through
``pyarrow.fs.S3FileSystem`` built here, because a directly built one ignores
``AWS_ENDPOINT_URL`` (TRAPS.md): the endpoint comes from the option, then the standard
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` variables.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow.fs as pafs

from storage.credentials import require_credentials
from storage.errors import StorageError, storage_errors

# Transient S3 errors (503 SlowDown, resets) are retried by the AWS SDK with backoff;
# 10 attempts ride out throttling bursts without hanging on a dead endpoint.
S3_MAX_ATTEMPTS = 10
# Fail fast on an unreachable endpoint; a live one answers a TCP connect in well under this.
S3_CONNECT_TIMEOUT_S = 5.0
S3_REQUEST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Location:
    """A resolved URI: the filesystem, the path inside it, and the URI as the user wrote it."""

    filesystem: pafs.FileSystem
    path: str  # no scheme, no trailing slash: "bucket/key/prefix" or "/abs/local/dir"
    uri: str

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    def join(self, *parts: str) -> str:
        """A path inside this location."""
        return "/".join([self.path.rstrip("/"), *parts])

    def uri_of(self, path: str) -> str:
        """The user-facing URI of a path inside this filesystem."""
        return f"s3://{path}" if self.is_s3 else path


def require_bucket(location: Location, option: str) -> None:
    """Raise StorageError naming ``option`` when the location's S3 bucket does not exist."""
    if not location.is_s3:
        return
    bucket = location.path.split("/", 1)[0]
    with storage_errors(location.uri):
        missing = location.filesystem.get_file_info(bucket).type == pafs.FileType.NotFound
    if missing:
        raise StorageError(f"{location.uri}: bucket {bucket!r} does not exist; create it or fix {option}")


def s3_endpoint(endpoint_url: str | None) -> str | None:
    """The S3 endpoint to use: the option, else the AWS SDK's standard variables, else AWS."""
    return endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def resolve(uri: str, endpoint_url: str | None = None) -> Location:
    """Resolve ``uri`` (``s3://bucket/prefix``, ``file:///dir`` or a local path)."""
    if not uri:
        raise StorageError("empty URI: pass an s3://bucket/prefix or a local path")
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        return _resolve_s3(uri, parsed, s3_endpoint(endpoint_url))
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else uri
        return Location(pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(path)).rstrip("/") or "/", uri)
    raise StorageError(f"{uri}: unsupported scheme {parsed.scheme!r}; use s3://bucket/prefix or a local path")


def _resolve_s3(uri: str, parsed, endpoint: str | None) -> Location:
    bucket = parsed.netloc
    if not bucket:
        raise StorageError(f"{uri}: no bucket in the URI; write it as s3://bucket/prefix")
    require_credentials(uri)
    filesystem = pafs.S3FileSystem(
        region=_region(uri, bucket, endpoint),
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=S3_MAX_ATTEMPTS),
        connect_timeout=S3_CONNECT_TIMEOUT_S,
        request_timeout=S3_REQUEST_TIMEOUT_S,
        **_endpoint_args(uri, endpoint),
    )
    return Location(filesystem, f"{bucket}/{parsed.path.strip('/')}".rstrip("/"), uri)


def _endpoint_args(uri: str, endpoint: str | None) -> dict[str, str]:
    if not endpoint:
        return {}
    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise StorageError(f"{uri}: bad S3 endpoint {endpoint!r}; write it as http(s)://host:port")
    _check_reachable(uri, endpoint, parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80))
    return {"endpoint_override": parsed.netloc, "scheme": parsed.scheme}


def _check_reachable(uri: str, endpoint: str, host: str, port: int) -> None:
    """One TCP connect, so a dead endpoint fails now instead of after the SDK's retries (minutes)."""
    try:
        socket.create_connection((host, port), timeout=S3_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise StorageError(
            f"{uri}: cannot reach the S3 endpoint {endpoint} ({e.strerror or e}); check --s3-endpoint-url / AWS_ENDPOINT_URL"
        ) from e


def _region(uri: str, bucket: str, endpoint: str | None) -> str:
    """The bucket's region: from the environment, or asked of AWS (custom endpoints: us-east-1)."""
    configured = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if configured or endpoint:
        return configured or "us-east-1"
    with storage_errors(uri):
        try:
            return pafs.resolve_s3_region(bucket)
        except (ValueError, OSError) as e:
            raise StorageError(f"{uri}: cannot find bucket {bucket!r}'s region ({e}); set AWS_REGION") from e
