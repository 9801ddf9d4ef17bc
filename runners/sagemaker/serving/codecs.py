"""Request and response bodies <-> Arrow tables, chosen by content type through a table.

Use ``decode``/``encode`` from the handler; add a content type by adding a table entry.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET = "application/x-parquet"


class UnsupportedContentTypeError(ValueError):
    """The request's Content-Type or Accept is not one the handler speaks."""


class UndecodableInputError(ValueError):
    """The body does not parse as its content type claims, or lacks a needed column."""


def _parquet_to_table(body: bytes) -> pa.Table:
    try:
        return pq.read_table(io.BytesIO(body))
    except (pa.ArrowInvalid, OSError) as e:
        raise UndecodableInputError(f"body is not a Parquet file ({' '.join(str(e).split())[:200]})") from e


def _table_to_parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


DECODERS: dict[str, Callable[[bytes], pa.Table]] = {PARQUET: _parquet_to_table}
ENCODERS: dict[str, Callable[[pa.Table], bytes]] = {PARQUET: _table_to_parquet}


def _base(content_type: str | None) -> str:
    """``application/x-parquet; charset=...`` -> ``application/x-parquet``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode(body: bytes, content_type: str | None) -> pa.Table:
    decoder = DECODERS.get(_base(content_type))
    if decoder is None:
        raise UnsupportedContentTypeError(
            f"content type {content_type!r} is not supported; send one of {', '.join(DECODERS)}"
        )
    return decoder(body)


def encode(table: pa.Table, accept: str | None) -> tuple[bytes, str]:
    """The response body and its content type.

    The toolkit never passes a missing Accept or ``*/*``: it substitutes the container's
    ``SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT`` (``container.environment()`` sets Parquet).
    """
    wanted = _base(accept)
    encoder = ENCODERS.get(wanted)
    if encoder is None:
        raise UnsupportedContentTypeError(f"accept {accept!r} is not supported; ask for one of {', '.join(ENCODERS)}")
    return encoder(table), wanted
