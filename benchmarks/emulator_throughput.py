"""Requests per second the emulator serves: simple authenticated GETs over keep-alive.

Starts ``linkstats-emulator`` in a subprocess (as a user would), seeds one link, then reads it
from a few threads, each holding one keep-alive connection, and prints the figure. The client is
``http.client`` because ``requests`` would be the bottleneck, not the server.

    python -m benchmarks.emulator_throughput [--requests 20000] [--threads 4]
"""

from __future__ import annotations

import argparse
import http.client
import re
import subprocess
import sys
import threading
import time
from urllib.parse import urlencode, urlsplit

API_KEY = "bench-key"
TARGET = 1500  # requests per second the issue asks for on a 2-core machine


def start_emulator() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--port", "0", "--api-key", API_KEY],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the banner, printed once the port is listening
    match = re.search(r"links (http://\S+),", line)
    if not match:
        process.terminate()
        raise RuntimeError(f"emulator did not start: {line!r}")
    return process, match.group(1)


def worker(host: str, port: int, path: str, count: int, failures: list[int]) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}
    for _ in range(count):
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            failures.append(response.status)
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    process, url = start_emulator()
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        seed = http.client.HTTPConnection(host, port, timeout=10)
        body = urlencode({"url": "https://example.com/landing", "alias": "bench", "domain_id": 1})
        seed.request(
            "POST",
            "/public/api/v1/links",
            body=body,
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert seed.getresponse().status == 201
        seed.close()
        path = "/public/api/v1/links/1"
        worker(host, port, path, 500, [])  # warm-up
        per_thread = args.requests // args.threads
        failures: list[int] = []
        threads = [
            threading.Thread(target=worker, args=(host, port, path, per_thread, failures)) for _ in range(args.threads)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        total = per_thread * args.threads
        rate = total / elapsed
        verdict = "meets" if rate >= TARGET and not failures else "MISSES"
        print(
            f"emulator throughput: {rate:,.0f} GET/s ({total} requests, {args.threads} keep-alive connections, "
            f"{elapsed:.2f} s, {len(failures)} errors) - {verdict} the {TARGET:,}/s target"
        )
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
