"""Reading an S3 object whose key pyarrow cannot name: a key with an empty path segment (``photos/a//b.jpg``).

S3 keys are any string; some uploaders write ``//`` (a path joined with an empty folder name), and
pyarrow's S3 filesystem lists such a key but refuses to open it (``ArrowInvalid: Empty path
component``). ``read_bytes`` is the one way the job reads a whole object: through pyarrow as usual,
and for such a key through botocore's GetObject, with the same endpoint, region, credential chain,
retries and timeouts as the pyarrow filesystem it was resolved with. The key is sent as written,
so the object's id stays its key, empty segments kept.

Use ``read_bytes(location, path)`` wherever a whole object is read by a listed path.
"""

from __future__ import annotations

import functools

import pyarrow.fs as pafs

from storage.resolve import S3_CONNECT_TIMEOUT_S, S3_REQUEST_TIMEOUT_S, Location, s3_max_attempts

EMPTY_SEGMENT = "//"


def has_empty_segment(path: str) -> bool:
    """Whether an S3 path (``bucket/key``) holds an empty path segment, which pyarrow refuses to open."""
    return EMPTY_SEGMENT in path


def read_bytes(location: Location, path: str) -> bytes:
    """The whole object at ``path`` (inside ``location``'s filesystem).

    FileNotFoundError when it is gone, OSError when the store refuses it (as pyarrow raises them).
    """
    if location.is_s3 and has_empty_segment(path):
        return _get_object(location.filesystem, path)
    with location.filesystem.open_input_stream(path) as f:
        return f.read()


def _get_object(filesystem: pafs.FileSystem, path: str) -> bytes:
    import botocore.exceptions  # botocore, not boto3: the credential chain storage already relies on

    bucket, key = path.split("/", 1)
    client = _client(*_client_options(filesystem))
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "404"):
            raise FileNotFoundError(f"s3://{path}: NoSuchKey") from e
        raise OSError(f"s3://{path}: {code or e}") from e
    except botocore.exceptions.BotoCoreError as e:  # connection failures after botocore's retries
        raise OSError(f"s3://{path}: {e}") from e


def _client_options(filesystem: pafs.FileSystem) -> tuple[str | None, str, int]:
    """(endpoint URL or None, region, tries per request) of a pyarrow S3 filesystem, as it pickles them."""
    _, (options,) = pafs.S3FileSystem.__reduce__(filesystem)  # the options pyarrow keeps, whatever a subclass pickles
    override = options.get("endpoint_override") or ""
    endpoint = f"{options.get('scheme') or 'https'}://{override}" if override else None
    return endpoint, options.get("region") or "us-east-1", getattr(filesystem, "max_attempts", None) or s3_max_attempts()


@functools.lru_cache(maxsize=8)  # one client per store and process: botocore clients are thread-safe and slow to make
def _client(endpoint: str | None, region: str, max_attempts: int):
    import botocore.config
    import botocore.session

    config = botocore.config.Config(retries={"mode": "standard", "max_attempts": max_attempts},
                                    connect_timeout=S3_CONNECT_TIMEOUT_S, read_timeout=S3_REQUEST_TIMEOUT_S,
                                    max_pool_connections=32)
    return botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name=region, config=config)
