"""moto's S3 server, bound to loopback only (ThreadedMotoServer listens on 0.0.0.0 unless told)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer


S3_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def start_s3_server() -> tuple[ThreadedMotoServer, str]:
    # Imported here, not at the top: a lent GPU machine runs tests/gpu without moto installed.
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines in test output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def s3_server_env() -> dict[str, str]:
    return dict(S3_TEST_ENV)
