"""A loopback stand-in for the SageMaker container: GET /ping, POST /invocations.

Use for ``--local`` runs and tests. It loads ``code/handler.py`` from an unpacked
model.tar.gz by the container contract (``model_fn`` once, then ``input_fn`` ->
``predict_fn`` -> ``output_fn`` per request), so the packaged code is what runs. It binds
127.0.0.1 unless a host is given: the server runs a model on whatever it is sent.

Answers: a body over ``MaxPayloadInMB`` gets 413 naming it; an unknown content type 415; a
body the handler cannot decode 400 with the reason; a failure inside the model 500 with one
line. Chunked request bodies (``Transfer-Encoding: chunked``) are read like any other.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType

from runners.sagemaker.serving.codecs import UndecodableInputError, UnsupportedContentTypeError

LOOPBACK = "127.0.0.1"
MB = 1024 * 1024


class PayloadTooLargeError(ValueError):
    """The request body is larger than MaxPayloadInMB."""


def load_handler(model_dir: str, entry_point: str = "handler.py") -> ModuleType:
    """Import ``model_dir/code/<entry_point>`` as the container would (code/ on sys.path)."""
    code_dir = os.path.join(model_dir, "code")
    if code_dir not in sys.path:
        sys.path.append(code_dir)  # appended: in-process, the installed packages (same code) win
    name = "sagemaker_user_handler"
    spec = importlib.util.spec_from_file_location(name, os.path.join(code_dir, entry_point))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here while the file runs
    spec.loader.exec_module(module)
    return module


class TransformServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model_dir: str, host: str, port: int, max_payload_mb: int) -> None:
        self.handler = load_handler(model_dir)
        self.model = self.handler.model_fn(model_dir)
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
            model, handler = self.server.model, self.server.handler
            data = handler.input_fn(body, self.headers.get("Content-Type"))
            payload, content_type = handler.output_fn(handler.predict_fn(data, model), self.headers.get("Accept"))
        except PayloadTooLargeError as e:
            self.close_connection = True  # the rest of the body was not read
            self._error(413, str(e))
        except UnsupportedContentTypeError as e:
            self._error(415, str(e))
        except UndecodableInputError as e:
            self._error(400, str(e))
        except Exception as e:  # noqa: BLE001 - any model failure is this request's 500, not the server's death
            self._error(500, f"{type(e).__name__}: {' '.join(str(e).split())[:500]}")
        else:
            self._reply(200, payload, content_type)

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
                raise UndecodableInputError(f"bad chunk size line {size_line[:40]!r} in a chunked body") from e
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
