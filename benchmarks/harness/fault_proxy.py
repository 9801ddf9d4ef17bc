"""A loopback HTTP proxy in front of the S3 server that injects S3's transient faults.

Use it in reliability tests and ``benchmarks/fault_bench.py``: start it in front of moto's
server and pass ``proxy.url`` as ``--s3-endpoint-url``. It forwards requests as they came
(method, path, headers including Host, bodies, chunked ones included) over one keep-alive
upstream connection per client connection, and streams the answers back. A seeded schedule
picks which requests fail, and how:

- ``slowdown``: S3's own ``503 SlowDown`` error; the request never reaches the server.
- ``reset``: the connection closes with no answer; the request never reaches the server.
- ``truncate``: a GET's answer is cut mid-body and the connection closed (the server did
  the work). Only GETs: that is where bodies are large enough to be cut in practice, and a
  cut answer to a write that took effect is a different fault class.

``latency_s`` delays every request, as a slow or distant store would.
``deny(predicate)`` answers the requests ``predicate(method, path)`` accepts with S3's ``403
AccessDenied`` (no client retries it) and forwards the rest: a store error on one folder only,
e.g. every write to a table's ``_delta_log/``; ``deny(None)`` lifts it.
``fail_all`` answers every request with ``SlowDown``: an endpoint that is down for good.
``fail_from(predicate)`` sets it at the first request ``predicate(method, path)`` accepts,
e.g. the first read of an input file once a job has planned. ``counts`` holds the requests
seen and the faults injected, by kind.
"""

from __future__ import annotations

import http.client
import io
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import BinaryIO
from urllib.parse import urlparse

FAULT_KINDS = ("slowdown", "reset", "truncate")
# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection and are not forwarded;
# Transfer-Encoding is re-applied by whoever sends the body on.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
# Answered by this proxy (http.server sends "100 Continue"), so not asked of the server again.
NOT_FORWARDED = HOP_BY_HOP | {"expect"}
STREAM_CHUNK = 64 * 1024
# S3's own answer, RequestId and HostId included: its size matters (a read buffer smaller
# than the error body is a known way for S3 clients to fail instead of retrying).
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>K2H6N7ZGQT6WHCEG</RequestId>"
    b"<HostId>WWoZlnK4pTjKCYn6eNV7GgOurabfqLkjbSyqTvDMGBaI9uwzyNhSaDhOCPs8paFGye7S6b/AB+Q=</HostId></Error>"
)
ACCESS_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message>'
    b"<RequestId>K2H6N7ZGQT6WHCEH</RequestId><HostId>denied-by-the-fault-proxy</HostId></Error>"
)


class FaultProxy(ThreadingHTTPServer):
    """``with FaultProxy(upstream, fault_rate=0.1, seed=0) as proxy:`` ``proxy.url``, ``proxy.counts``."""

    daemon_threads = True

    def __init__(self, upstream: str, fault_rate: float = 0.0, seed: int = 0,
                 kinds: tuple[str, ...] = FAULT_KINDS, fail_all: bool = False, latency_s: float = 0.0) -> None:
        if not 0.0 <= fault_rate <= 1.0 or not kinds or set(kinds) - set(FAULT_KINDS):
            raise ValueError(f"fault_rate must be in [0, 1] and kinds a subset of {FAULT_KINDS}; got {fault_rate}, {kinds}")
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname, parsed.port or 80)
        self.fault_rate, self.kinds, self.fail_all, self.latency_s = fault_rate, kinds, fail_all, latency_s
        self._fail_when: Callable[[str, str], bool] | None = None
        self._deny_when: Callable[[str, str], bool] | None = None
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> FaultProxy:
        threading.Thread(target=self.serve_forever, name="fault-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def fail_from(self, predicate: Callable[[str, str], bool]) -> None:
        """Fail every request from the first one ``predicate(method, path)`` accepts on."""
        with self._lock:
            self._fail_when = predicate

    def deny(self, predicate: Callable[[str, str], bool] | None) -> None:
        """Answer the requests ``predicate(method, path)`` accepts with ``403 AccessDenied`` (None: none)."""
        with self._lock:
            self._deny_when = predicate

    def next_fault(self, method: str, path: str) -> str | None:
        """Count a request and draw its fate: a fault kind, or None to forward it."""
        with self._lock:
            self.counts["requests"] += 1
            if self._deny_when is not None and self._deny_when(method, path):
                self.counts["denied"] += 1
                return "denied"
            if self._fail_when is not None and self._fail_when(method, path):
                self.fail_all = True
            if self.fail_all:
                kind = "slowdown"
            else:
                kinds = [k for k in self.kinds if k != "truncate" or method == "GET"]
                # Two draws per request whatever happens, so the schedule depends on the order only.
                hit, pick = self._rng.random() < self.fault_rate, self._rng.random()
                kind = kinds[int(pick * len(kinds))] if hit and kinds else None
            if kind:
                self.counts[kind] += 1
            return kind

    def faults(self) -> int:
        return sum(self.counts[k] for k in FAULT_KINDS)


class _Handler(BaseHTTPRequestHandler):
    server: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect
    upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass

    def handle_one_request(self) -> None:
        # One method for every verb: the proxy does not care which it is.
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline or not self.parse_request():
            self.close_connection = True
            return
        try:
            self._proxy()
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the client or the server went away mid-request
            if self.upstream is not None:
                self.upstream.close()
                self.upstream = None
        self.wfile.flush()

    def finish(self) -> None:
        super().finish()
        if self.upstream is not None:
            self.upstream.close()

    def _proxy(self) -> None:
        body = self._read_body()  # always read, so a faulted request leaves the stream clean
        fault = self.server.next_fault(self.command, self.path)
        time.sleep(self.server.latency_s)
        if fault == "slowdown":
            headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(SLOW_DOWN)))]
            return self._reply(503, headers, io.BytesIO(SLOW_DOWN), len(SLOW_DOWN))
        if fault == "denied":
            headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(ACCESS_DENIED)))]
            return self._reply(403, headers, io.BytesIO(ACCESS_DENIED), len(ACCESS_DENIED))
        if fault == "reset":
            self.close_connection = True  # close with no answer at all
            return
        response = self._forward(body)
        headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
        source, length = response, response.length or 0  # http.client: 0 for HEAD, 204, 304
        if response.length is None:  # a chunked answer: pass it on whole, with its length
            source = io.BytesIO(response.read())
            length = len(source.getvalue())
            headers.append(("Content-Length", str(length)))
        cut = length // 2 if fault == "truncate" and length >= 2 else None
        self._reply(response.status, headers, source, length if cut is None else cut)
        response.read()  # drain what was not sent, so the upstream connection stays usable
        if cut is not None:
            self.close_connection = True  # the client was promised `length` bytes and got `cut`

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return b"".join(self._chunks())
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _chunks(self) -> Iterator[bytes]:
        while True:
            size = int(self.rfile.readline(1024).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return
            yield self.rfile.read(size)
            self.rfile.readline(2)  # CRLF after the chunk

    def _forward(self, body: bytes | None) -> http.client.HTTPResponse:
        if self.upstream is None:
            self.upstream = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        self.upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            if name.lower() not in NOT_FORWARDED:
                self.upstream.putheader(name, value)
        if chunked:
            self.upstream.putheader("Transfer-Encoding", "chunked")
        self.upstream.endheaders(message_body=_as_chunked(body) if chunked else body)
        return self.upstream.getresponse()

    def _reply(self, status: int, headers: list[tuple[str, str]], body: BinaryIO, count: int) -> None:
        """Send the status and headers, then ``count`` bytes of ``body`` as they arrive."""
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        while count > 0 and self.command != "HEAD":
            data = body.read(min(STREAM_CHUNK, count))
            if not data:
                return
            self.wfile.write(data)
            count -= len(data)


def _as_chunked(body: bytes | None) -> bytes:
    """A body in chunked transfer coding (one chunk), as the client sent it chunked."""
    data = body or b""
    return (f"{len(data):x}\r\n".encode() + data + b"\r\n" if data else b"") + b"0\r\n\r\n"
