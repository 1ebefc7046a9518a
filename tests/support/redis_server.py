"""A real ``redis-server`` (Debian's) on a free loopback port, for the shared-store tests.

``RedisServer`` starts it with nothing saved to disk, can stop it and start it again on the same
port (Redis down mid-run), and skips the test, saying why, where ``redis-server`` is not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
        self.port = _free_port()
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, db=0)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
