"""Many hosts, one budget (issue 42): what the shared store costs and what it buys.

    python -m benchmarks.shared_store [--window 60] [--json FILE]

Against a real ``redis-server`` on a free port and the emulator limiting as a real phpShort does
(60 requests a window per address, 120 per key):

- the cost: Redis round trips per API request and the latency the shared budget adds to each
  (p50, p99), over 55 reads of one process (one window's budget for the address);
- three hosts (processes, each with its own cache directory and its own forwarding proxy stamping
  an address of its own) creating 100 links each at once, with and without the store: answers
  429 and the wall time against the ideal (300 creates at the key's 120 a window: 2.5 windows,
  150 s at the real minute; ``--window`` scales it);
- a pod per task: 20 processes with empty caches creating one link each, with and without the
  store: the requests the service saw (at most 22 with it: one probe, one account read, 20
  creates).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import Row, verdict

REPO = Path(__file__).resolve().parents[1]
READS = 55


def cost_rows(window: float) -> list[Row]:
    import os

    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY, connection_json
    from tests.support.redis_server import RedisServer

    with RedisServer() as redis, Emulator(api_keys=(API_KEY,)) as emu:
        os.environ["AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT"] = connection_json(emu.url)
        os.environ["AIRFLOW_CONN_SHARED_REDIS"] = redis.url
        os.environ["AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID"] = "shared_redis"
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        hook = LinkstatsLinksHook(rate_limit_window=window)
        link = hook.create_link("https://example.com/bench")
        shared = hook.client.limiter.shared
        taken: list[float] = []
        take = shared.take

        def timed() -> float:
            started = time.perf_counter()
            try:
                return take()
            finally:
                taken.append(time.perf_counter() - started)

        shared.take = timed
        before_trips, before_sent = shared.round_trips, hook.client.limiter.sent
        for _ in range(READS):  # within one window's 60 for the address: no wait measured
            hook.get_link(link["id"])
        trips = (shared.round_trips - before_trips) / (hook.client.limiter.sent - before_sent)
        os.environ.pop("AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID")
    quantiles = statistics.quantiles([t * 1000 for t in taken], n=100)
    return [
        Row("8. many hosts", f"Redis round trips per API request ({READS} reads, one process)", f"{trips:.2f}", "",
            "<= 2", verdict(trips <= 2)),
        Row("8. many hosts", "latency the shared budget adds per request: p50, p99",
            f"{quantiles[49]:.2f} ms, {quantiles[98]:.2f} ms"),
    ]  # fmt: skip


def hosts_rows(window: float) -> list[Row]:
    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY
    from tests.integration import test_shared_state as shared
    from tests.support.redis_server import RedisServer

    shared.WINDOW = window
    rows = []
    ideal = 300 / 120 * window
    with RedisServer() as redis, Emulator(api_keys=(API_KEY,), rate_limit=60, rate_limit_window=window) as emu:
        for label, url in (("with the store", redis.url), ("without it", None)):
            tmp = Path(tempfile.mkdtemp(prefix="linkstats-bench-hosts-"))
            started = time.monotonic()
            barrier = tmp / "barrier"
            barrier.mkdir()
            reports, throttled = shared._run_hosts(tmp, emu, url, barrier=barrier)
            wall = max(report["ended"] for report, _ in reports) - emu.go  # from the common start to the last create
            total = time.monotonic() - started
            rows.append(Row(
                "8. many hosts",
                f"3 hosts x 100 creates on addresses of their own, {label} (window {window:g} s):"
                f" {throttled} answered 429;"
                f" {wall:.1f} s from their common start to the last create ({total:.0f} s with the processes' start)",
                f"{wall:.1f} s", f"{wall / ideal:.3f}x ideal ({ideal:.0f} s = 300 / 120 a window)",
                "0 x 429, <= 1.05x" if url else "", verdict(throttled == 0 and wall <= 1.05 * ideal) if url else "",
            ))  # fmt: skip
    return rows


def pods_rows() -> list[Row]:
    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY
    from tests.integration import test_shared_state as shared
    from tests.support.redis_server import RedisServer

    rows = []
    with RedisServer() as redis, Emulator(api_keys=(API_KEY,)) as emu:
        for label, url in (("with the store", redis.url), ("without it", None)):
            tmp = Path(tempfile.mkdtemp(prefix="linkstats-bench-pods-"))
            reports, _ = shared._run_hosts(tmp, emu, url, hosts=20, links=1, own_addresses=False, api_version="auto")
            requests = emu.stats.count()
            made = sum(report["made"] for report, _ in reports)
            rows.append(Row(
                "8. many hosts", f"a pod per task: 20 processes with empty caches creating one link each, {label}:"
                f" {made} links", f"{requests} requests", f"{requests / 20:.2f} per link",
                "<= 22" if url else "", verdict(requests <= 22) if url else "",
            ))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.shared_store")
    parser.add_argument("--window", type=float, default=60.0, help="the emulator's window (60: a real install)")
    parser.add_argument("--json", help="write the rows here as JSON")
    parser.add_argument("--only", choices=["cost", "hosts", "pods"], action="append")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    parts = {"cost": lambda: cost_rows(args.window), "hosts": lambda: hosts_rows(args.window), "pods": pods_rows}
    rows = [row for name in (args.only or parts) for row in parts[name]()]
    for row in rows:
        print(f"| {row.section} | {row.what} | {row.figure} | {row.ratio} | {row.target} | {row.verdict} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": [row.__dict__ for row in rows]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
