"""A loopback stand-in for the SageMaker container: GET /ping, POST /invocations.

Use for ``--local`` runs and tests. It plays TorchServe's part (HTTP, the payload cap) and
hands every request to the real SageMaker PyTorch inference toolkit (``toolkit.Toolkit``)
holding an unpacked model.tar.gz, so the packaged handler is loaded and called as in the
container, and answers as the container does: 200 with the handler's body; 500 with the
toolkit's message and trace for an unknown content type, a bad body or a model failure. It
binds 127.0.0.1 unless a host is given: the server runs a model on whatever it is sent.

Before the toolkit: a body over ``MaxPayloadInMB`` gets 413 naming it, and a malformed
chunked body 400. Chunked request bodies (``Transfer-Encoding: chunked``) are read like any other.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runners.sagemaker.toolkit import Toolkit

LOOPBACK = "127.0.0.1"
MB = 1024 * 1024


class PayloadTooLargeError(ValueError):
    """The request body is larger than MaxPayloadInMB."""


class MalformedChunkError(ValueError):
    """A chunked request body whose chunk size line does not parse."""


class TransformServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model_dir: str, host: str, port: int, max_payload_mb: int) -> None:
        self.toolkit = Toolkit(model_dir)  # loads the model once, as a container worker does
        self.max_payload_bytes = max_payload_mb * MB
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
        except PayloadTooLargeError as e:
            self.close_connection = True  # the rest of the body was not read
            self._error(413, str(e))
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
        """``size`` bytes of body; over the cap they are read and dropped, so the client gets
        its 413 after sending instead of a connection reset mid-send."""
        return self.rfile.read(size) if size <= self.server.max_payload_bytes else self._discard(size)

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
            parts.append(self._read_limited(size) if total <= self.server.max_payload_bytes else self._discard(size))
            self.rfile.readline(2)  # the CRLF after each chunk

    def _check_size(self, size: int) -> None:
        if size > self.server.max_payload_bytes:
            raise PayloadTooLargeError(
                f"request body of {size / MB:.1f} MB exceeds MaxPayloadInMB={self.server.max_payload_mb}; "
                "use smaller shards or raise --max-payload-mb (max 100)"
            )

    def _error(self, status: int, message: str) -> None:
        self._reply(status, json.dumps({"error": message}).encode(), "application/json")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start_server(model_dir: str, host: str = LOOPBACK, port: int = 0, max_payload_mb: int = 6) -> TransformServer:
    """Load the model and serve in a daemon thread; call ``shutdown()`` and ``server_close()`` when done."""
    server = TransformServer(model_dir, host, port, max_payload_mb)
    threading.Thread(target=server.serve_forever, name="sagemaker-local-server", daemon=True).start()
    return server
