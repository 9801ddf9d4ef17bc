"""A loopback stand-in for the SageMaker container: GET /ping, POST /invocations.

Use for ``--local`` runs and tests. It plays TorchServe's part (HTTP, its request size limit)
and hands every request to the real SageMaker PyTorch inference toolkit (``toolkit.Toolkit``)
holding an unpacked model.tar.gz, so the packaged handler is loaded and called as in the
container, and answers as the container does: 200 with the handler's body; 500 with the
toolkit's message and trace, and no content type, for an unknown content type, a bad body or a
model failure. It binds 127.0.0.1 unless a host is given: the server runs a model on whatever
it is sent.

It runs with the model's container variables (``container.environment(max_payload_mb)``, as
the AWS model gets them), and so with TorchServe's limit: a body over ``TS_MAX_REQUEST_SIZE``
(6,553,500 bytes without it) gets TorchServe's 413, empty, as its HTTP layer sends it. A
malformed chunked body gets 400. Chunked request bodies (``Transfer-Encoding: chunked``) are
read like any other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runners.sagemaker import container
from runners.sagemaker.toolkit import Toolkit

LOOPBACK = "127.0.0.1"
MB = 1024 * 1024


class PayloadTooLargeError(ValueError):
    """The request body is larger than the container's TorchServe accepts."""


class MalformedChunkError(ValueError):
    """A chunked request body whose chunk size line does not parse."""


class TransformServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model_dir: str, host: str, port: int, max_payload_mb: int,
                 container_env: Mapping[str, str]) -> None:
        self.toolkit = Toolkit(model_dir, container_env)  # loads the model once, as a container worker does
        self.max_request_bytes = container.request_limit(container_env)  # TorchServe's, not the job's
        self.max_payload_mb = max_payload_mb
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: TransformServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass  # one line per request would drown the job's own output

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path == "/ping":
            self._reply(200, b"", "text/plain")
        elif self.path == "/execution-parameters":
            # Batch Transform asks this to pick its defaults; we answer with the cap we enforce.
            body = {"MaxConcurrentTransforms": 1, "BatchStrategy": "MultiRecord", "MaxPayloadInMB": self.server.max_payload_mb}
            self._reply(200, json.dumps(body).encode(), "application/json")
        else:
            self._error(404, f"no such path {self.path}; use /ping or /invocations")

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/invocations":
            self._error(404, f"no such path {self.path}; POST to /invocations")
            return
        try:
            body = self._read_body()
        except PayloadTooLargeError:
            # TorchServe's HTTP layer (Netty's HttpObjectAggregator) answers 413 with no body.
            self.close_connection = True
            self._reply(413, b"", None)
            return
        except MalformedChunkError as e:
            self.close_connection = True
            self._error(400, str(e))
            return
        # The toolkit turns every handler error into a 500 itself; nothing here can raise past it.
        response = self.server.toolkit.invoke(body, dict(self.headers.items()))
        self._reply(response.status, response.body, response.content_type)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body, size = self._read_chunked()
        else:
            size = int(self.headers.get("Content-Length") or 0)
            body = self._read_limited(size)
        self._check_size(size)
        return body

    def _read_limited(self, size: int) -> bytes:
        """``size`` bytes of body; over the limit they are read and dropped, so the client gets
        its 413 after sending instead of a connection reset mid-send."""
        return self.rfile.read(size) if size <= self.server.max_request_bytes else self._discard(size)

    def _discard(self, size: int) -> bytes:
        while size > 0:
            read = len(self.rfile.read(min(size, MB)))
            size = size - read if read else 0  # the client hung up
        return b""

    def _read_chunked(self) -> tuple[bytes, int]:
        parts, total = [], 0
        while True:
            size_line = self.rfile.readline(1024)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as e:
                raise MalformedChunkError(f"bad chunk size line {size_line[:40]!r} in a chunked body") from e
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers: none that we use
                return b"".join(parts), total
            total += size
            parts.append(self._read_limited(size) if total <= self.server.max_request_bytes else self._discard(size))
            self.rfile.readline(2)  # the CRLF after each chunk

    def _check_size(self, size: int) -> None:
        if size > self.server.max_request_bytes:
            raise PayloadTooLargeError(f"request body of {size} bytes exceeds {self.server.max_request_bytes}")

    def _error(self, status: int, message: str) -> None:
        self._reply(status, json.dumps({"error": message}).encode(), "application/json")

    def _reply(self, status: int, body: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type is not None:  # TorchServe sends none when the worker set none
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start_server(model_dir: str, host: str = LOOPBACK, port: int = 0, max_payload_mb: int = 6,
                 container_env: Mapping[str, str] | None = None) -> TransformServer:
    """Load the model and serve in a daemon thread; call ``shutdown()`` and ``server_close()`` when done.

    ``container_env``: the model's container variables; by default the ones the runner gives
    its AWS model for ``max_payload_mb`` (pass others to see what a differently set up
    container would answer).
    """
    env = container.environment(max_payload_mb) if container_env is None else container_env
    server = TransformServer(model_dir, host, port, max_payload_mb, env)
    threading.Thread(target=server.serve_forever, name="sagemaker-local-server", daemon=True).start()
    return server
