"""A small scripted HTTP/1.1 server for fault tests: each request takes the next scripted step.

Steps are plain tuples so a test reads like the exchange it expects:
    ("respond", status, body, headers)  a normal answer (body: dict/list -> JSON, str/bytes raw);
                                        headers {"Date": None}: no Date header at all
    ("drop",)                           read the request, then close without a byte of answer
    ("truncate", status, body)          announce the full length, send half, close
    ("hang", seconds)                   read the request, answer nothing for that long, then close
When the script is empty the ``default`` step answers. Every request is recorded with its
headers and body, and every accepted connection is counted.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "date" and not self.server.send_date:
            return  # a server (or a proxy) whose answers carry no Date header
        super().send_header(keyword, value)

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        record = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qsl(parts.query, keep_blank_values=True),
            "headers": dict(self.headers.items()),
            "body": body.decode("utf-8", "replace"),
            "form": parse_qsl(body.decode(), keep_blank_values=True) if body else [],
        }
        with self.server.lock:
            self.server.requests.append(record)
            step = self.server.script.popleft() if self.server.script else None
        if step is None:
            step = self.server.default(record) if callable(self.server.default) else self.server.default
        action = step[0]
        if action == "respond":
            _, status, payload, *rest = step
            headers = rest[0] if rest else {}
            self._send(status, payload, headers)
        elif action == "drop":
            self.close_connection = True
            self.connection.close()
        elif action == "truncate":
            _, status, payload = step
            data = _encode(payload)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.close()
        elif action == "hang":
            time.sleep(step[1])
            self.close_connection = True
            self.connection.close()
        else:  # pragma: no cover - a typo in a test's script
            raise ValueError(f"unknown step {step!r}")

    def _send(self, status: int, payload: Any, headers: dict[str, str | None]) -> None:
        data = _encode(payload)
        if "Date" in headers and headers["Date"] is None:  # a server (or proxy) that sends no Date
            self.send_response_only(status)
            headers = {k: v for k, v in headers.items() if k != "Date"}
        else:
            self.send_response(status)
        if "Content-Type" not in headers:
            self.send_header(
                "Content-Type", "application/json" if not isinstance(payload, (str, bytes)) else "text/html"
            )
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _handle


def _encode(payload: Any) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.script: deque = deque()
        self.requests: list[dict[str, Any]] = []
        self.connections = 0
        self.default: Any = ("respond", 200, {"data": []})
        self.send_date = True  # False: no answer carries a Date header


class ScriptedServer:
    def __init__(self, *, send_date: bool = True) -> None:
        self._server = _Server()
        self._server.send_date = send_date
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *steps: tuple) -> ScriptedServer:
        with self._server.lock:
            self._server.script.extend(steps)
        return self

    def reset(self) -> None:
        """Forget the script, the requests and the connection count; answer with the initial default."""
        with self._server.lock:
            self._server.script.clear()
            self._server.requests.clear()
            self._server.connections = 0
            self._server.default = ("respond", 200, {"data": []})

    def set_default(self, step: Any) -> None:
        """A step, or a function of the request record returning a step, for unscripted requests."""
        self._server.default = step

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._server.lock:
            return list(self._server.requests)

    @property
    def connections(self) -> int:
        return self._server.connections
