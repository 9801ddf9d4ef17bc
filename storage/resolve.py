"""Resolve a URI to a pyarrow filesystem and a path inside it.

Use ``resolve(uri, endpoint_url)`` everywhere data is read or written. S3 goes through
``pyarrow.fs.S3FileSystem`` built here, because a directly built one ignores
``AWS_ENDPOINT_URL`` (only ``FileSystem.from_uri`` honours it): the endpoint comes from the option, then the standard
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` variables. An S3 URI is refused before any work when
the standard AWS credential chain finds nothing (``require_credentials``).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow.fs as pafs

from storage.errors import StorageError, storage_errors

# Transient S3 errors (503 SlowDown, resets) are retried by the AWS SDK, waiting up to
# 2^n seconds (at most 20 s) between tries: 10 attempts ride out throttling bursts, and a
# store that is gone for good fails each request after about 90 s instead of hanging.
# AWS_MAX_ATTEMPTS, the AWS SDKs' own variable, overrides it.
S3_MAX_ATTEMPTS = 10
# Fail fast on an unreachable endpoint; a live one answers a TCP connect in well under this.
S3_CONNECT_TIMEOUT_S = 5.0
S3_REQUEST_TIMEOUT_S = 60.0
# Hadoop's names for S3: s3a:// (what Databricks and Spark users write) and the retired s3n://. They
# name the same bucket and key as s3://, so they resolve as s3:// and share its output prefix and lease.
S3_ALIASES = ("s3a", "s3n")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Location:
    """A resolved URI: the filesystem, the path inside it, and the URI as the user wrote it."""

    filesystem: pafs.FileSystem
    path: str  # no scheme, no trailing slash: "bucket/key/prefix" or "/abs/local/dir"
    uri: str

    def __post_init__(self) -> None:
        # Spelt one way however the Location was made: an S3 location whose URI said "S3://" would pass for a local
        # path, and ``writer`` and ``uri_of`` would then make a folder named after the bucket in the working directory.
        object.__setattr__(self, "uri", normalise(self.uri))

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    def join(self, *parts: str) -> str:
        """A path inside this location."""
        return "/".join([self.path.rstrip("/"), *parts])

    def writer(self, path: str) -> pafs.NativeFile:
        """An output stream for ``path``, its folder made first where folders exist (S3 has none to make)."""
        if not self.is_s3:
            self.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return self.filesystem.open_output_stream(path)

    def uri_of(self, path: str) -> str:
        """The user-facing URI of a path inside this filesystem."""
        return f"s3://{path}" if self.is_s3 else path


class RetryingS3FileSystem(pafs.S3FileSystem):
    """``pyarrow.fs.S3FileSystem`` with the AWS standard retry strategy, kept across pickling.

    pyarrow drops ``retry_strategy`` when it pickles an S3FileSystem (apache/arrow#47348, still
    so in pyarrow 26), so Ray actors and Spark tasks would silently retry 3 times, not ours.
    """

    def __init__(self, *, max_attempts: int, **options) -> None:
        super().__init__(retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=max_attempts), **options)
        self.max_attempts = max_attempts

    def __reduce__(self):
        _, (options,) = super().__reduce__()
        return _rebuild_s3, (self.max_attempts, options)


def _rebuild_s3(max_attempts: int, options: dict) -> RetryingS3FileSystem:
    return RetryingS3FileSystem(max_attempts=max_attempts, **options)


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


def has_credentials(url: str | None) -> bool:
    """Whether ``url`` carries ``user:password@``, as pyarrow's ``s3://KEY:SECRET@bucket/`` does.

    A secret key may hold "/", which ends the URL's authority early, so: an s3:// authority
    with "@" or ":" (a bucket name has neither), or an endpoint URL with "@" anywhere.
    """
    if not url or "://" not in url:
        return False
    scheme, rest = normalise(url).split("://", 1)
    if scheme == "s3":
        authority = rest.split("/", 1)[0]
        return "@" in authority or ":" in authority
    return "@" in rest


def redact(url: str) -> str:
    """``url`` with any credentials replaced by ``***``: safe to print."""
    if not has_credentials(url):
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}" if "@" in rest else f"{scheme}://***"


def _refuse_credentials(url: str, what: str) -> None:
    if has_credentials(url):
        raise StorageError(
            f"{redact(url)}: {what} carries credentials (user:password@), which would end up in logs and the "
            "manifest; drop them and use AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )


def s3_max_attempts() -> int:
    """Tries per S3 request: ``AWS_MAX_ATTEMPTS`` when set, else ``S3_MAX_ATTEMPTS``."""
    value = os.environ.get("AWS_MAX_ATTEMPTS")
    if value is None:
        return S3_MAX_ATTEMPTS
    if not value.strip().isdigit() or int(value) < 1:
        raise StorageError(f"AWS_MAX_ATTEMPTS={value!r}: expected a positive integer (tries per S3 request)")
    return int(value)


def normalise(uri: str) -> str:
    """``uri`` spelt one way: its scheme in lower case, S3's aliases (``S3_ALIASES``) as ``s3``.

    Use it on every URI a user gives before comparing, recording or resolving it: ``S3://b/x``,
    ``s3a://b/x`` and ``s3://b/x`` are one prefix, so they must take one lease. Paths without a
    scheme, and the rest of the URI (bucket, key), are returned as they are.
    """
    match = _SCHEME.match(uri)
    if match is None:
        return uri
    scheme = match.group(1).lower()
    return f"{'s3' if scheme in S3_ALIASES else scheme}://{uri[match.end():]}"


def resolve(uri: str, endpoint_url: str | None = None) -> Location:
    """Resolve ``uri`` (``s3://bucket/prefix``, ``file:///dir`` or a local path), spelt as ``normalise`` spells it."""
    if not uri:
        raise StorageError("empty URI: pass an s3://bucket/prefix or a local path")
    uri = normalise(uri)
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        _refuse_credentials(uri, "the URI")
        return _resolve_s3(uri, parsed, s3_endpoint(endpoint_url))
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else uri
        return Location(pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(path)).rstrip("/") or "/", uri)
    raise StorageError(f"{uri}: unsupported scheme {parsed.scheme!r}; use s3://bucket/prefix or a local path")


def within(uri: str, prefix: str) -> bool:
    """Whether ``uri`` is ``prefix`` or lies under it, folder by folder, in the same store (``s3://b/in-2`` is not in
    ``s3://b/in``). By the URIs alone, without a request; local paths are compared with their links resolved."""
    place, outer = _place(uri), _place(prefix)
    return place[0] == outer[0] and (place[1] == outer[1] or place[1].startswith(outer[1].rstrip("/") + "/"))


def _place(uri: str) -> tuple[str, str]:
    """(store, path) of a URI: ("s3", "bucket/key"), or ("local", a resolved absolute path)."""
    parsed = urlparse(normalise(uri))
    if parsed.scheme in ("", "file"):
        return "local", os.path.realpath(os.path.expanduser(parsed.path if parsed.scheme == "file" else uri))
    return parsed.scheme, f"{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")


def _resolve_s3(uri: str, parsed, endpoint: str | None) -> Location:
    bucket = parsed.netloc
    if not bucket:
        raise StorageError(f"{uri}: no bucket in the URI; write it as s3://bucket/prefix")
    require_credentials(uri)
    filesystem = RetryingS3FileSystem(
        max_attempts=s3_max_attempts(),
        region=_region(uri, bucket, endpoint),
        connect_timeout=S3_CONNECT_TIMEOUT_S,
        request_timeout=S3_REQUEST_TIMEOUT_S,
        **_endpoint_args(uri, endpoint),
    )
    return Location(filesystem, f"{bucket}/{parsed.path.strip('/')}".rstrip("/"), uri)


def require_credentials(uri: str) -> None:
    """Raise ``StorageError`` if the standard AWS credential chain finds nothing.

    pyarrow's S3 client would otherwise send unsigned requests and fail deep inside a worker.
    botocore walks the same chain as the AWS C++ SDK under pyarrow (environment, profiles, web
    identity, container and instance metadata), so its answer is the one that matters.
    """
    try:
        import botocore.session
    except ImportError as e:  # botocore is a core dependency; a broken install says so
        raise StorageError(f"{uri}: botocore is not installed; pip install botocore to use S3") from e
    if botocore.session.get_session().get_credentials() is None:
        raise StorageError(
            f"{uri}: no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or run on a node with an instance role"
        )


def _endpoint_args(uri: str, endpoint: str | None) -> dict[str, str]:
    if not endpoint:
        return {}
    _refuse_credentials(endpoint, "the S3 endpoint")
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
    try:
        return pafs.resolve_s3_region(bucket)
    except (ValueError, OSError) as e:  # pyarrow's only failures here: the answer names the way around them
        raise StorageError(f"{uri}: cannot find bucket {bucket!r}'s region ({e}); set AWS_REGION") from e
