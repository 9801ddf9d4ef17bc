"""Do on this machine what Batch Transform does on AWS: one request per shard object.

Use for ``--local``. Given the shard objects and a running ``server.TransformServer``, it
sends each shard as one ``POST /invocations`` (``max_concurrent_transforms`` at a time, from
a thread pool, as Batch Transform's agent does) and writes each 200 response as
``<shard>.out``. Like the agent, it never sends an object larger than ``MaxPayloadInMB``. A
shard that fails gets no ``.out``, exactly like the service; its reason is returned so
``assemble`` can write it into the error rows.
"""

from __future__ import annotations

import http.client
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from job import progress
from job.several.stages import rows_of_blob
from runners.sagemaker.assemble import OUT_SUFFIX
from runners.sagemaker.serving.codecs import PARQUET
from storage import Location, storage_errors

# Generous for a CPU model on a 100 MB shard; SageMaker's own default invocation timeout is 600 s.
REQUEST_TIMEOUT_S = 3600
MB = 1024 * 1024


@dataclass(frozen=True)
class Transform:
    url: str  # the serving container (here: the loopback server)
    shards: Location  # where the shard objects are
    outputs: Location  # where the .out objects go
    max_concurrent_transforms: int
    max_payload_mb: int  # the job's MaxPayloadInMB: a larger object is never sent
    several: bool = False  # --models: a response holds each model's rows of the shard (the display counts them all)


def run_transform(transform: Transform, shards: list[str]) -> dict[str, str]:
    """Send every shard; returns {shard name: why it failed} for the shards with no ``.out``."""
    with storage_errors(transform.outputs.uri):
        transform.outputs.filesystem.create_dir(transform.outputs.path, recursive=True)
    with ThreadPoolExecutor(max_workers=transform.max_concurrent_transforms) as pool:
        results = list(pool.map(lambda shard: (shard, _transform_one(transform, shard)), shards))
    return {shard: why for shard, why in results if why is not None}


def _transform_one(transform: Transform, shard: str) -> str | None:
    """Transform one shard; None on success, else the reason it failed."""
    path = transform.shards.join(shard)
    with storage_errors(transform.shards.uri_of(path)), transform.shards.filesystem.open_input_file(path) as f:
        body = f.read()
    if len(body) > transform.max_payload_mb * MB:
        return (f"Too much data for max payload size: {len(body)} bytes over MaxPayloadInMB={transform.max_payload_mb}; "
                "raise --max-payload-mb (max 100)")
    try:
        status, payload = post(transform.url, body)
    except OSError as e:  # connection refused/reset, timeout: the shard fails, the job goes on
        return f"request failed: {e}"
    if status == 413:  # TorchServe's answer carries no body
        return (f"HTTP 413: the serving container refused a request of {len(body)} bytes "
                "(TorchServe's max_request_size, the model's TS_MAX_REQUEST_SIZE)")
    if status != 200:
        return f"HTTP {status}: {_reason(payload)}"
    out = transform.outputs.join(shard + OUT_SUFFIX)
    with storage_errors(transform.outputs.uri_of(out)), transform.outputs.filesystem.open_output_stream(out) as sink:
        sink.write(payload)
    progress.advance(_rows_done(body, payload, transform.several))
    return None


def _rows_done(body: bytes, payload: bytes, several: bool) -> int:
    """The rows a 200 response finished: the shard's (one model), or every model's rows of it (several)."""
    if not several:
        return pq.ParquetFile(pa.BufferReader(body)).metadata.num_rows
    try:
        return sum(rows.num_rows for _, rows in rows_of_blob(pq.read_table(pa.BufferReader(payload))))
    except (KeyError, pa.ArrowInvalid):  # not several models' rows: assemble makes the shard error rows, naming why
        return 0


def post(url: str, body: bytes, content_type: str = PARQUET) -> tuple[int, bytes]:
    """POST ``body`` to ``url``/invocations; returns (status, response body)."""
    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=REQUEST_TIMEOUT_S)
    try:
        connection.request("POST", "/invocations", body=body, headers={"Content-Type": content_type, "Accept": PARQUET})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _reason(payload: bytes) -> str:
    """The error of a failed request: the server's JSON ``error``, or the toolkit's first line
    (its message; the trace follows)."""
    try:
        return str(json.loads(payload)["error"])
    except (ValueError, KeyError, TypeError):
        text = payload.decode(errors="replace").strip()
        return (text.splitlines() or ["empty response"])[0][:300]
