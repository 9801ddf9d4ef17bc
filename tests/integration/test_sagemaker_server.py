"""The loopback server end to end on 127.0.0.1: the real toolkit holding the packaged handler."""

from __future__ import annotations

import http.client
import io
import json

import pyarrow.parquet as pq
import pytest

from job.rows import OUTPUT_SCHEMA
from runners.sagemaker.server import start_server
from tests.common.datasets import mixed_rows
from tests.common.sagemaker import packaged_model_dir, shard_body

ROWS = len(mixed_rows(good=2))  # what shard_body() holds


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    serving = start_server(packaged_model_dir(str(tmp_path_factory.mktemp("pkg"))), max_payload_mb=1)
    yield serving
    serving.shutdown()
    serving.server_close()


def request(server, method: str, path: str, body=None, headers=None, **kwargs) -> tuple[int, bytes]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {}, **kwargs)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_binds_loopback_and_answers_ping(server):
    assert server.server_address[0] == "127.0.0.1"
    assert request(server, "GET", "/ping")[0] == 200


def test_invocations_return_parquet_in_the_output_schema(server):
    status, body = request(server, "POST", "/invocations", shard_body(), {"Content-Type": "application/x-parquet"})
    table = pq.read_table(io.BytesIO(body))
    assert status == 200 and table.schema.equals(OUTPUT_SCHEMA, check_metadata=False) and table.num_rows == ROWS


def test_chunked_body_is_accepted(server):
    body = shard_body()
    chunks = (body[i : i + 4096] for i in range(0, len(body), 4096))
    status, reply = request(server, "POST", "/invocations", chunks, {"Content-Type": "application/x-parquet"}, encode_chunked=True)
    assert status == 200 and pq.read_table(io.BytesIO(reply)).num_rows == ROWS


@pytest.mark.parametrize("chunked", [False, True])
def test_over_the_cap_is_413_naming_max_payload(server, chunked):
    body = b"x" * (1024 * 1024 + 1)
    if chunked:
        status, reply = request(server, "POST", "/invocations", iter([body[:500_000], body[500_000:]]),
                                {"Content-Type": "application/x-parquet"}, encode_chunked=True)
    else:
        status, reply = request(server, "POST", "/invocations", body, {"Content-Type": "application/x-parquet"})
    assert status == 413 and "MaxPayloadInMB=1" in json.loads(reply)["error"]


@pytest.mark.parametrize("accept", [None, "*/*"], ids=["no-accept", "any"])
def test_no_accept_gets_parquet_as_from_the_container(server, accept):
    headers = {"Content-Type": "application/x-parquet", **({"Accept": accept} if accept else {})}
    status, body = request(server, "POST", "/invocations", shard_body(), headers)
    assert status == 200 and pq.read_table(io.BytesIO(body)).num_rows == ROWS


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        (b"garbage", "application/x-parquet", "not a Parquet file"),
        (b"a,b\n1,2\n", "text/csv", "content type 'text/csv' is not supported"),
    ],
)
def test_bad_requests_get_the_toolkits_500_with_the_reason_first(server, body, content_type, words):
    # The real toolkit answers every handler error with 500: so does --local.
    got, reply = request(server, "POST", "/invocations", body, {"Content-Type": content_type})
    assert got == 500 and words in reply.decode().splitlines()[0]
