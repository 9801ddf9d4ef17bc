"""Conditional writes of one small object: create only if absent, replace or delete only if unchanged.

The primitives a lease needs (``job.lease.lease``), on S3 and on local paths alike:
``create_exclusive`` (S3 ``If-None-Match: *``), ``read_versioned`` (the bytes and a version:
the S3 ETag, or a SHA-256 of the bytes locally), ``replace_if`` and ``delete_if`` (S3
``If-Match``). A write returns the version it made, or None when its condition failed. pyarrow's S3 filesystem cannot send conditional headers, so S3 goes through a
botocore client built from the Location's own filesystem options (endpoint, region, scheme) and
the standard credential chain: the same store and the same credentials as the data path.

Locally every operation holds an exclusive ``flock`` on the object's folder while it reads and
writes, so a compare-and-swap is atomic between processes on one machine (and on NFS where
the mount supports locks); the kernel drops the lock when a process dies, so a crash never
leaves it held. Readers that take no lock (pyiceberg polling ``version-hint.text``, a reader
listing ``metadata/``) never see an object empty or half written either: a write fills a hidden
temporary file beside it and then switches the name to it in one step (``link`` to create,
``rename`` to replace), as an S3 PUT appears whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator

import pyarrow.fs as pafs

from storage.errors import StorageError, explain, storage_errors
from storage.resolve import S3_CONNECT_TIMEOUT_S, S3_REQUEST_TIMEOUT_S, Location, s3_max_attempts

# S3 answers 409 ConditionalRequestConflict while another conditional write to the key is in
# flight; the conflicting write decides, so asking again shortly after gets the real answer.
CONFLICT_RETRIES, CONFLICT_WAIT_S = 5, 0.2


def create_exclusive(location: Location, path: str, data: bytes) -> str | None:
    """Write ``data`` at ``path`` only if nothing is there; returns its version, or None if something is."""
    if location.is_s3:
        return _s3_write(location, path, data, IfNoneMatch="*")
    with _folder_lock(path), _written_aside(path, data) as temporary:
        try:
            os.link(temporary, path)  # atomic, and refused when the name exists: create-if-absent of the whole object
        except FileExistsError:
            return None
    return _version(data)


def read_versioned(location: Location, path: str) -> tuple[bytes, str] | None:
    """(bytes, version) of the object at ``path``, or None if there is none."""
    if location.is_s3:
        return _s3_read(location, path)
    with _folder_lock(path):
        return _local_read(path)


def replace_if(location: Location, path: str, data: bytes, version: str) -> str | None:
    """Replace the object at ``path`` with ``data`` only if it is still at ``version``; returns the new version, or None."""
    if location.is_s3:
        return _s3_write(location, path, data, IfMatch=version)
    with _folder_lock(path):
        current = _local_read(path)
        if current is None or current[1] != version:
            return None
        with _written_aside(path, data) as temporary:
            os.replace(temporary, path)  # readers see the old bytes or the new, never a truncated file
    return _version(data)


def delete_if(location: Location, path: str, version: str) -> bool:
    """Delete the object at ``path`` only if it is still at ``version``; False otherwise."""
    if location.is_s3:
        return _s3_call(location, path, "delete_object", IfMatch=version) is not None
    with _folder_lock(path):
        current = _local_read(path)
        if current is None or current[1] != version:
            return False
        os.unlink(path)
    return True


@contextlib.contextmanager
def _folder_lock(path: str) -> Iterator[None]:
    """Hold the lock on ``path``'s folder (made if missing) for the block.

    An OSError in the block or in making the folder (one this user may not write, a file where a
    folder should be) becomes a one-line ``StorageError`` naming ``path`` and the fix.
    """
    with storage_errors(path):
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def _written_aside(path: str, data: bytes) -> Iterator[str]:
    """A hidden file beside ``path`` holding ``data`` (flushed to disk), removed after the block if still there."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())  # the name must never point at bytes a crash could still lose
        yield temporary
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _local_read(path: str) -> tuple[bytes, str] | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    return data, _version(data)


def _version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _s3_read(location: Location, path: str) -> tuple[bytes, str] | None:
    """The object's bytes and ETag; None when there is none. A body cut short (the connection dropped after the
    headers) is read again with the whole GET: botocore retries requests, not the reading of their bodies."""
    from botocore.exceptions import ResponseStreamingError

    attempts = s3_max_attempts()
    for attempt in range(attempts):
        response = _s3_call(location, path, "get_object", missing_ok=True)
        if response is None:
            return None
        try:
            return response["Body"].read(), response["ETag"]
        except ResponseStreamingError as e:
            if attempt == attempts - 1:
                raise explain(location.uri_of(path), e) from e
            time.sleep(min(0.1 * 2**attempt, 2.0))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _s3_write(location: Location, path: str, data: bytes, **condition: str) -> str | None:
    response = _s3_call(location, path, "put_object", Body=data, **condition)
    return None if response is None else response["ETag"]


def _s3_call(location: Location, path: str, operation: str, missing_ok: bool = False, **arguments) -> dict | None:
    """One S3 call on ``path``; None when its condition failed (412, or 404 for a conditional call)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = path.split("/", 1)
    for attempt in range(CONFLICT_RETRIES + 1):
        try:
            return getattr(_s3_client(location.filesystem), operation)(Bucket=bucket, Key=key, **arguments)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code == "ConditionalRequestConflict" and attempt < CONFLICT_RETRIES:
                time.sleep(CONFLICT_WAIT_S * (attempt + 1))
                continue
            if code in ("PreconditionFailed", "412") or (code in ("NoSuchKey", "404") and (missing_ok or "IfMatch" in arguments)):
                return None
            raise explain(location.uri_of(path), e) from e
        except BotoCoreError as e:
            raise explain(location.uri_of(path), e) from e
    raise StorageError(f"{location.uri_of(path)}: S3 kept answering 409 ConditionalRequestConflict; run again")


_clients: dict[tuple, object] = {}
_clients_lock = threading.Lock()  # botocore sessions are not thread-safe while they build a client


def _s3_client(filesystem: pafs.S3FileSystem):
    """A botocore S3 client for the store ``filesystem`` talks to (one per store, reused: clients are thread-safe)."""
    _, (options,) = pafs.S3FileSystem.__reduce__(filesystem)  # the options the filesystem was built with
    endpoint = f"{options['scheme']}://{options['endpoint_override']}" if options.get("endpoint_override") else None
    key = (endpoint, options.get("region"), options.get("access_key"))
    with _clients_lock:
        if key not in _clients:
            _clients[key] = _new_client(endpoint, options)
        return _clients[key]


def _new_client(endpoint: str | None, options: dict):
    import botocore.config  # botocore: a core dependency, already the credential check's (storage.resolve.require_credentials)
    import botocore.session

    config = botocore.config.Config(connect_timeout=S3_CONNECT_TIMEOUT_S, read_timeout=S3_REQUEST_TIMEOUT_S,
                                    retries={"mode": "standard", "max_attempts": s3_max_attempts()})
    return botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name=options.get("region") or None, config=config,
        aws_access_key_id=options.get("access_key") or None, aws_secret_access_key=options.get("secret_key") or None,
        aws_session_token=options.get("session_token") or None)
