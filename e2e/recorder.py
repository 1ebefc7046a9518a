"""A pass-through HTTP proxy in front of the emulator that records each answer's status.

The emulator's own statistics route counts requests by method and path but not by the status it
answered, and the cleanup check needs exactly that ("DELETE answered 200 exactly once per link"),
including for a request whose caller was killed before it read the answer. Airflow's connections
point here; every request is forwarded unchanged to the emulator and recorded as
(method, endpoint, status, path) once the emulator has answered.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization"}


def endpoint(method: str, path: str) -> str:
    """``DELETE /public/api/v1/links/42?x=1`` -> ``DELETE /links/{id}``: numbers grouped, API prefix dropped."""
    path = path.split("?", 1)[0]
    path = re.sub(r"^/public/api/v1", "", path)
    return f"{method} " + re.sub(r"/\d+(?=/|$)", "/{id}", path)


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A caller killed mid-request (the worker the test kills) resets its connection: expected."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Recorder:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.records: list[tuple[str, str, int, str]] = []  # (method, endpoint, status, path)
        self.times: list[float] = []  # time.time() of each record, same order
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the hooks' sessions expect

            def log_message(self, *args: object) -> None:  # the access log would include nothing secret,
                pass  # but it is noise: the records are the log

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream = recorder.connection()
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                except (OSError, http.client.HTTPException):
                    recorder.drop_connection()
                    self.send_error(502, "emulator unreachable")
                    return
                recorder.record(self.command, self.path, answer.status)
                self.send_response_only(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                try:
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the caller is gone (a killed worker): the answer was still recorded
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = forward

        self.local = threading.local()
        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="recorder", daemon=True)

    def connection(self) -> http.client.HTTPConnection:
        """One upstream keep-alive connection per handler thread."""
        if getattr(self.local, "conn", None) is None:
            self.local.conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        return self.local.conn

    def drop_connection(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
        self.local.conn = None

    def record(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.records.append((method, endpoint(method, path), status, path.split("?", 1)[0]))
            self.times.append(time.time())

    def start(self) -> Recorder:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def counts(self) -> Counter:
        """{(endpoint, status): n}"""
        with self.lock:
            return Counter((ep, status) for _, ep, status, _ in self.records)

    def timeline(self, method: str) -> list[tuple[float, str, int]]:
        """(time.time(), path, status) of every answer to ``method``, oldest first."""
        with self.lock:
            pairs = zip(self.records, self.times, strict=True)
            return [(t, path, status) for (m, _, status, path), t in pairs if m == method]

    def statuses_by_path(self, method: str) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        with self.lock:
            for m, _, status, path in self.records:
                if m == method:
                    found.setdefault(path, []).append(status)
        return found
