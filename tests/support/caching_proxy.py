"""A reverse proxy that caches authenticated API pages, as a misconfigured proxy or CDN does.

It forwards every request to ``upstream`` (the emulator) and keeps each GET answer, keyed by its
path and query less the parameters named in ``ignored`` (a CDN told to ignore a query parameter),
and serves the kept copy to every later GET with the same key, whatever the request's
``Cache-Control`` says: the copy keeps its ``Date`` (when the origin answered) and, with ``age``,
carries an ``Age`` header (seconds it has been kept), as RFC 9111 caches send it. A proxy that sends
no ``Age`` (``age=False``) is the harder case: only the old ``Date`` tells.
"""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        proxy = self.server.proxy
        parts = urlsplit(self.path)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in proxy.ignored]
        key = (parts.path, urlencode(sorted(query)))
        with proxy.lock:
            proxy.requests.append((self.command, self.path, dict(self.headers.items())))
            kept = proxy.cache.get(key) if self.command == "GET" and proxy.caching else None
        if kept is not None:
            status, headers, payload, stored = kept
            proxy.hits += 1
            headers = [(k, v) for k, v in headers if k.lower() != "age"]
            if proxy.age:
                headers.append(("Age", str(max(1, int(time.time() - stored)))))
            return self._answer(status, headers, payload)
        upstream = urlsplit(proxy.upstream)
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
        try:
            forwarded = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "host"}
            if proxy.forwarded_for:  # a load balancer's stamp: the client address the service counts
                forwarded["X-Forwarded-For"] = proxy.forwarded_for
            connection.request(self.command, self.path, body=body, headers=forwarded)
            response = connection.getresponse()
            payload = response.read()
            headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP]
            status = response.status
        finally:
            connection.close()
        if self.command == "GET" and status == 200 and proxy.caching:
            with proxy.lock:
                proxy.cache[key] = (status, headers, payload, time.time())
                proxy.misses += 1
        self._answer(status, headers, payload)

    def _answer(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: CachingProxy


class CachingProxy:
    def __init__(self, upstream: str, *, ignored: tuple[str, ...] = (), age: bool = True) -> None:
        self.upstream = upstream.rstrip("/")
        self.ignored = set(ignored)
        self.age = age
        self.caching = True
        self.forwarded_for: str | None = None
        self.cache: dict[tuple[str, str], tuple[int, list, bytes, float]] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self.hits = self.misses = 0
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> CachingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def forwarding_proxy(upstream: str, client_address: str) -> CachingProxy:
    """A proxy that caches nothing and stamps ``X-Forwarded-For: client_address``: one host of a
    deployment reaching the service from an address of its own (tests/integration/test_shared_state.py)."""
    proxy = CachingProxy(upstream)
    proxy.caching = False
    proxy.forwarded_for = client_address
    return proxy
