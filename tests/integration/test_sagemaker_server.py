"""The loopback server end to end on 127.0.0.1: the real toolkit holding the packaged handler,
with the request size limit of the container the runner's AWS model is."""

from __future__ import annotations

import contextlib
import http.client
import io

import pyarrow.parquet as pq
import pytest

from runners.sagemaker import container
from runners.sagemaker.server import start_server
from tests.common.datasets import mixed_rows
from tests.common.sagemaker import archived_schema, packaged_model_dir, shard_body, shard_of_size

ROWS = len(mixed_rows(good=2))  # what shard_body() holds


MIB = 1024 * 1024
# What the 2.6.0 image's TorchServe accepts when the model's variables do not say otherwise.
TORCHSERVE_DEFAULT = 6_553_500


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return packaged_model_dir(str(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def server(model_dir):
    serving = start_server(model_dir, max_payload_mb=1)
    yield serving
    serving.shutdown()
    serving.server_close()


@contextlib.contextmanager
def serving(model_dir: str, **kwargs):
    server = start_server(model_dir, **kwargs)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def request(server, method: str, path: str, body=None, headers=None, **kwargs) -> tuple[int, bytes]:
    status, reply, _ = request_with_headers(server, method, path, body, headers, **kwargs)
    return status, reply


def request_with_headers(server, method: str, path: str, body=None, headers=None, **kwargs):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {}, **kwargs)
        response = connection.getresponse()
        return response.status, response.read(), response.headers
    finally:
        connection.close()


def test_binds_loopback_and_answers_ping(server):
    assert server.server_address[0] == "127.0.0.1"
    assert request(server, "GET", "/ping")[0] == 200


def test_invocations_return_parquet_in_the_output_schema(server, model_dir):
    status, body = request(server, "POST", "/invocations", shard_body(), {"Content-Type": "application/x-parquet"})
    table = pq.read_table(io.BytesIO(body))
    assert status == 200 and table.schema.equals(archived_schema(model_dir), check_metadata=False) and table.num_rows == ROWS


def test_chunked_body_is_accepted(server):
    body = shard_body()
    chunks = (body[i : i + 4096] for i in range(0, len(body), 4096))
    status, reply = request(server, "POST", "/invocations", chunks, {"Content-Type": "application/x-parquet"}, encode_chunked=True)
    assert status == 200 and pq.read_table(io.BytesIO(reply)).num_rows == ROWS


@pytest.mark.parametrize("chunked", [False, True])
def test_over_the_containers_limit_is_torchserves_empty_413(server, chunked):
    # max_payload_mb=1: the model's TS_MAX_REQUEST_SIZE is 1 MiB.
    body = b"x" * (MIB + 1)
    if chunked:
        status, reply, headers = request_with_headers(server, "POST", "/invocations", iter([body[:500_000], body[500_000:]]),
                                                      {"Content-Type": "application/x-parquet"}, encode_chunked=True)
    else:
        status, reply, headers = request_with_headers(server, "POST", "/invocations", body,
                                                      {"Content-Type": "application/x-parquet"})
    assert (status, reply, headers.get("Content-Type")) == (413, b"", None)


@pytest.mark.parametrize("max_payload_mb", [6, 10, 25])
def test_every_shard_under_max_payload_is_served_below_and_above_6_mb(model_dir, max_payload_mb):
    # The server runs the container variables the AWS model gets for this MaxPayloadInMB.
    with serving(model_dir, max_payload_mb=max_payload_mb) as server:
        assert server.max_request_bytes == container.request_limit(container.environment(max_payload_mb))
        for size in (5 * MIB, max_payload_mb * MIB - 64 * 1024):
            status, reply = request(server, "POST", "/invocations", shard_of_size(size), {"Content-Type": "application/x-parquet"})
            assert status == 200 and pq.read_table(io.BytesIO(reply)).column("id").to_pylist() == ["big"], (size, reply[:200])
        status, _ = request(server, "POST", "/invocations", shard_of_size(max_payload_mb * MIB + 1),
                            {"Content-Type": "application/x-parquet"})
        assert status == 413


def test_a_container_without_the_limit_refuses_shards_over_torchserves_default(model_dir):
    # What AWS answered before the model carried TS_MAX_REQUEST_SIZE: 413 for every shard over
    # 6,553,500 bytes, whatever MaxPayloadInMB said.
    env = {k: v for k, v in container.environment(10).items() if not k.startswith("TS_")}
    with serving(model_dir, max_payload_mb=10, container_env=env) as server:
        below = request(server, "POST", "/invocations", shard_of_size(TORCHSERVE_DEFAULT - 64 * 1024),
                        {"Content-Type": "application/x-parquet"})
        above = request(server, "POST", "/invocations", shard_of_size(TORCHSERVE_DEFAULT + 1),
                        {"Content-Type": "application/x-parquet"})
    assert (below[0], above[0]) == (200, 413)


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
    # The real toolkit answers every handler error with 500, and TorchServe's worker sends it
    # with no content type (the toolkit sets none on errors): so does --local.
    got, reply, headers = request_with_headers(server, "POST", "/invocations", body, {"Content-Type": content_type})
    assert got == 500 and words in reply.decode().splitlines()[0]
    assert headers.get("Content-Type") is None
