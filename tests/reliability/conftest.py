"""Fixtures for the reliability tests: a fault-injecting proxy in front of the S3 server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from benchmarks.harness.fault_proxy import FaultProxy


@pytest.fixture()
def fault_proxy(s3_env) -> Callable[..., FaultProxy]:
    """``fault_proxy(fault_rate=0.15, seed=1, ...)``: a started proxy in front of the S3 server, stopped after the test."""
    started: list[FaultProxy] = []

    def start(**options) -> FaultProxy:
        started.append(FaultProxy(s3_env, **options).start())
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()
