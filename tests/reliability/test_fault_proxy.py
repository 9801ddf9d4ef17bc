"""The fault proxy itself: faithful when it forwards, S3-like when it fails, deterministic."""

from __future__ import annotations

import http.client

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from benchmarks.harness.fault_proxy import FAULT_KINDS, FaultProxy

NO_RETRIES = Config(retries={"total_max_attempts": 1, "mode": "standard"})


def client(proxy: FaultProxy):
    return boto3.client("s3", endpoint_url=proxy.url, config=NO_RETRIES)


def connect(proxy: FaultProxy) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", proxy.server_address[1], timeout=30)


def test_forwards_requests_and_answers_faithfully(s3_bucket, fault_proxy):
    proxy = fault_proxy()
    s3 = client(proxy)
    body = bytes(range(256)) * 1000
    s3.put_object(Bucket=s3_bucket, Key="a", Body=body)
    assert s3.get_object(Bucket=s3_bucket, Key="a")["Body"].read() == body
    assert s3.get_object(Bucket=s3_bucket, Key="a", Range="bytes=10-19")["Body"].read() == body[10:20]
    assert s3.head_object(Bucket=s3_bucket, Key="a")["ContentLength"] == len(body)  # HEAD keeps the length
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=s3_bucket)["Contents"]] == ["a"]
    with pytest.raises(ClientError, match="NoSuchKey"):
        s3.get_object(Bucket=s3_bucket, Key="missing")
    assert proxy.counts == {"requests": 6}


def test_chunked_request_bodies_and_keep_alive(s3_bucket, s3_env, fault_proxy):
    proxy = fault_proxy()
    connection = connect(proxy)
    for key in ("one", "two"):  # two requests over one connection
        connection.request("PUT", f"/{s3_bucket}/{key}", body=iter([b"hello ", key.encode()]), encode_chunked=True)
        response = connection.getresponse()
        assert response.status == 200, response.read()
        response.read()
    connection.close()
    direct = boto3.client("s3", endpoint_url=s3_env)
    assert direct.get_object(Bucket=s3_bucket, Key="two")["Body"].read() == b"hello two"


def test_faults_look_like_s3s(s3_bucket, s3_env, fault_proxy):
    boto3.client("s3", endpoint_url=s3_env).put_object(Bucket=s3_bucket, Key="k", Body=b"x" * 10_000)
    with pytest.raises(ClientError, match="SlowDown"):
        client(fault_proxy(fault_rate=1.0, kinds=("slowdown",))).get_object(Bucket=s3_bucket, Key="k")
    connection = connect(fault_proxy(fault_rate=1.0, kinds=("reset",)))
    connection.request("GET", f"/{s3_bucket}/k")
    with pytest.raises(http.client.RemoteDisconnected):
        connection.getresponse()
    answer = client(fault_proxy(fault_rate=1.0, kinds=("truncate",))).get_object(Bucket=s3_bucket, Key="k")
    assert answer["ContentLength"] == 10_000  # the full length is promised...
    with pytest.raises(BotoCoreError, match="5000"):  # ... and half of it sent
        answer["Body"].read()


def test_schedule_is_seeded_and_near_the_rate(s3_bucket, fault_proxy):
    def faults(seed: int) -> dict:
        proxy = fault_proxy(fault_rate=0.3, seed=seed)
        s3 = client(proxy)
        for _ in range(60):
            try:
                s3.head_bucket(Bucket=s3_bucket)
            except (ClientError, BotoCoreError):
                pass  # a fault: what we count
        return dict(proxy.counts)

    first, again, other = faults(seed=5), faults(seed=5), faults(seed=6)
    assert first == again != other
    assert 8 <= sum(first.get(k, 0) for k in FAULT_KINDS) <= 30 and "truncate" not in first  # HEADs are never cut


def test_fail_all_and_fail_from(s3_bucket, fault_proxy):
    proxy = fault_proxy()
    s3 = client(proxy)
    s3.head_bucket(Bucket=s3_bucket)
    proxy.fail_from(lambda method, path: method == "PUT")
    s3.head_bucket(Bucket=s3_bucket)  # not yet
    for _ in range(2):  # the PUT that trips it, and everything after
        with pytest.raises(ClientError, match="SlowDown|503"):
            s3.put_object(Bucket=s3_bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError, match="503"):
        s3.head_bucket(Bucket=s3_bucket)
    assert proxy.counts == {"requests": 5, "slowdown": 3}
