"""What every benchmark shares: the emulator in a subprocess, its admin API, seeding, timing.

The emulator runs in its own process (as ``linkstats-emulator``), so the server's CPU is not the
client's; on a 2-core machine that keeps one core for each side.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

API_KEY = "bench-key-0b7e"
API_PREFIX = "/public/api/v1"
LINKS_CONN_ID = "linkstats_bench"
HTTP_CONN_ID = "http_bench"


def airflow_env(home: str | None = None) -> dict[str, str]:
    """A private Airflow home, so a benchmark never touches ~/airflow."""
    home = home or os.environ.get("LINKSTATS_BENCH_AIRFLOW_HOME") or tempfile.mkdtemp(prefix="linkstats-bench-home-")
    return {
        "AIRFLOW_HOME": home,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": os.path.join(home, "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        # Progress and "not expired yet" lines would bury the table (and cost a little per call).
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "LINKSTATS_BENCH_AIRFLOW_HOME": home,
    }


def connection_env(url: str) -> dict[str, str]:
    """Both connections as AIRFLOW_CONN_ JSON: ours, and an ``http`` one for the HTTP provider."""
    ours = {"conn_type": "linkstats_links", "host": url, "password": API_KEY}
    # What a user of HttpHook writes: the API root as host, the Bearer header in the extras
    # (HttpHook sends every extra as a header).
    theirs = {
        "conn_type": "http",
        "host": url + API_PREFIX,
        "extra": {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"},
    }
    return {
        f"AIRFLOW_CONN_{LINKS_CONN_ID.upper()}": json.dumps(ours),
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": json.dumps(ours),
        f"AIRFLOW_CONN_{HTTP_CONN_ID.upper()}": json.dumps(theirs),
    }


# -- the emulator --------------------------------------------------------------------------------


class EmulatorProcess:
    """``python -m airflow_provider_linkstats.emulator`` on a free port, and its admin routes."""

    def __init__(self, extra_args: tuple[str, ...] = ()) -> None:
        """``extra_args`` go to the emulator's command line."""
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow_provider_linkstats.emulator",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--api-key",
                API_KEY,
                # The generation the benchmarks were written for; the command line's default is 49/31.
                "--api-version",
                "44",
                "--analytics-version",
                "3",
                *extra_args,  # e.g. --rate-limit 60 --rate-limit-window 60 (a later --api-version wins)
            ],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the banner, printed once the port listens
        match = re.search(r"links (http://\S+),", line)
        if not match:
            self.stop()
            self._log.seek(0)
            raise RuntimeError(f"the emulator did not start: {line!r} {self._log.read().decode()[-2000:]}")
        self.url = match.group(1)
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self._local = threading.local()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> EmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cpu_seconds(self) -> float:
        """User + system CPU of the emulator process so far (Linux /proc)."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return float("nan")

    # -- raw HTTP (http.client: cheaper than requests, so seeding is bounded by the server) -----

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        return conn

    def request(self, method: str, path: str, body: Any = None, *, form: dict | None = None) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        data: bytes | None = None
        if path.startswith(API_PREFIX):
            headers["Authorization"] = f"Bearer {API_KEY}"
        if form is not None:
            data = urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            reused = getattr(self._local, "conn", None) is not None
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                self._local.conn = None
                # A kept-alive connection the server closed while idle (its keep-alive timeout ran
                # out during a long measurement): the request never arrived, so send it once more.
                if not reused or attempt == 2:
                    raise
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                raise
        if not raw.strip():
            return response.status, None
        try:
            return response.status, json.loads(raw)
        except ValueError:  # a redirect's or an error page's body
            return response.status, raw.decode("utf-8", "replace")

    def admin(self, method: str, route: str, body: Any = None) -> Any:
        status, payload = self.request(method, "/__emulator__" + route, body)
        if status >= 400:
            raise RuntimeError(f"emulator admin {method} {route}: HTTP {status} {payload}")
        return payload

    def count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """API requests the server saw since the last stats reset (counted server-side)."""
        query = urlencode({k: v for k, v in (("method", method), ("path_prefix", path_prefix)) if v})
        return int(self.admin("GET", "/stats" + (f"?{query}" if query else ""))["count"])

    def connections(self) -> int:
        """Distinct client TCP connections that sent API requests since the last stats reset."""
        return int(self.admin("GET", "/stats")["connections"])

    def reset_stats(self) -> None:
        self.admin("DELETE", "/stats")

    def set_latency(self, seconds: float) -> None:
        self.admin("POST", "/faults/latency", {"seconds": seconds})

    def advance_clock(self, seconds: float) -> None:
        self.admin("POST", "/clock", {"advance": seconds})

    def seed_links(
        self, count: int, *, start: int = 0, expiring: Callable[[int], dict] | None = None, threads: int = 4
    ) -> list[dict]:
        """Create ``count`` links over the API (aliases ``bench-00000``...), on a few keep-alive connections.

        Returns the created records in id order. ``expiring(i)`` may add expiration fields.
        """
        created: list[dict] = []
        lock = threading.Lock()
        errors: list[str] = []

        def work(indexes: range) -> None:
            mine = []
            for i in indexes:
                # domain_id 1: the install's global domain (phpShort v44 requires a domain on create)
                form = {"url": f"https://example.com/campaign/{i}", "alias": f"bench-{i:05d}", "domain_id": 1}
                if expiring is not None:
                    form.update(expiring(i))
                status, payload = self.request("POST", f"{API_PREFIX}/links", form=form)
                if status != 201:
                    errors.append(f"{status} {payload}")
                    return
                mine.append(payload["data"])
            with lock:
                created.extend(mine)

        chunk = math.ceil(count / threads)
        workers = [
            threading.Thread(target=work, args=(range(start + k * chunk, min(start + count, start + (k + 1) * chunk)),))
            for k in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            raise RuntimeError(f"seeding failed: {errors[0]}")
        return sorted(created, key=lambda r: r["id"])


# -- timing and the table ------------------------------------------------------------------------


@contextmanager
def timed() -> Iterator[list[float]]:
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


@dataclass
class Row:
    section: str
    what: str
    figure: str
    ratio: str = ""
    target: str = ""
    verdict: str = ""  # "met", "MISSED" or ""


def median(values: list[float]) -> float:
    return statistics.median(values)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
