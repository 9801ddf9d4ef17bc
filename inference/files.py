"""Read a whole file the model needs (a checkpoint, a labels file) from a local path or ``s3://`` URI; a local
file's sha256 (``sha256_of``: a Hugging Face folder's or an MLflow model's weights).

Torch-free. Storage problems become one ``WeightsError`` line naming the (redacted) URI, what
it was for and the fix; nothing is retried beyond what the S3 client does.
"""

from __future__ import annotations

import hashlib

from inference.errors import WeightsError
from storage import StorageError, redact, resolve, storage_errors


def read_bytes(uri: str, s3_endpoint_url: str | None, what: str, fix: str) -> bytes:
    """The bytes at ``uri``; ``what`` names it in errors ("weights", "labels"), ``fix`` says what to pass."""
    try:
        location = resolve(uri, s3_endpoint_url)
        with storage_errors(uri), location.filesystem.open_input_stream(location.path) as stream:
            return stream.read()
    except StorageError as e:
        raise WeightsError(f"cannot read {what} {redact(uri)}: {e}; {fix}") from e


def sha256_of(path: str) -> str:
    """The sha256 of a local file, read in chunks (model weights can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(16 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()
