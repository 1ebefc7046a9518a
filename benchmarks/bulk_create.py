"""A campaign launch at the service's speed (issue 26): ``LinkstatsBulkCreateLinksOperator`` behind
the real 60-requests-a-minute limit, and the same launch killed with SIGKILL at about half and retried.

The emulator counts requests in fixed windows as a real install does. A minute-long window makes
1,000 creates last 17 minutes, so by default both sides run on a clock ten times fast: the
emulator's window and the hook's (``rate_limit_window``) are 6 s, so 60 requests per 6 s is the
real limit at 10x; ``--window 60`` measures in real time. The ideal is N / limit windows: no
client sends more without 429s. Twins are links that share an alias or a destination; missing
ones are aliases asked for and not stored.

The killed launch runs the operator in a child process (a task's process, as a worker runs it);
the parent watches the emulator's count of creates and sends SIGKILL at about half, then runs the
retry in a second child. Requests in all (both tries, every request the server saw) are compared
with N + ceil(N/100): one create per link and one listing walk.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

from benchmarks.common import API_KEY, API_PREFIX, EmulatorProcess, Row, verdict

N = 1_000
LIMIT = 60  # requests a window per client address, as on a real install
WINDOW = 6.0  # seconds: the real minute on a clock ten times fast
WORKERS = 8
CONN_ID = "linkstats_bench_launch"


def connection(url: str) -> dict[str, str]:
    """The launch's connection: version and default domain named, so every request counted is a create or the walk."""
    value = {
        "conn_type": "linkstats_links",
        "host": url + API_PREFIX,
        "password": API_KEY,
        "extra": {"api_version": "44", "default_domain_id": 1, "timezone": "UTC"},
    }
    return {f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(value)}


def campaign(n: int, prefix: str) -> list[dict]:
    return [{"url": f"https://example.com/{prefix}{i}", "alias": f"{prefix}{i:05d}"} for i in range(n)]


def launch(n: int, prefix: str, window: float, result_dir: str) -> tuple[dict, float]:
    """One run of the operator, as a task runs it (the hook's window pinned to the scaled minute):
    its XCom and the seconds ``execute`` took (Airflow's imports and the connection's parsing,
    which a worker pays anyway, are done before the clock starts)."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator

    operator = LinkstatsBulkCreateLinksOperator(
        task_id="bench_bulk_create",
        links=campaign(n, prefix),
        linkstats_conn_id=CONN_ID,
        max_workers=WORKERS,
        result_path=f"file://{result_dir}/{prefix}result.json",
    )
    operator.hook = LinkstatsLinksHook(CONN_ID, rate_limit_window=window)
    operator.hook.client  # noqa: B018 - the connection read and the session built before the clock starts
    try:
        start = time.perf_counter()
        value = operator.execute(context={})
        return value, time.perf_counter() - start
    finally:
        operator.hook.close()


def census(emu: EmulatorProcess, prefix: str, n: int) -> tuple[int, int, int]:
    """(stored, twins, missing) of the campaign's links, read through the listing (limits off)."""
    stored: list[dict] = []
    page = 1
    while True:
        status, body = emu.request(
            "GET", f"/public/api/v1/links?search={prefix}&search_by=alias&per_page=100&page={page}"
        )
        assert status == 200, (status, body)
        stored += [link for link in body["data"] if str(link["alias"]).startswith(prefix)]
        if page >= body["meta"]["last_page"]:
            break
        page += 1
    aliases = [link["alias"] for link in stored]
    urls = [link["url"] for link in stored]
    twins = (len(aliases) - len(set(aliases))) + (len(urls) - len(set(urls)))
    missing = len({link["alias"] for link in campaign(n, prefix)} - set(aliases))
    return len(stored), twins, missing


def run(emu: EmulatorProcess, n: int = N, *, window: float = WINDOW, result_dir: str = "/tmp") -> list[Row]:
    os.environ.update(connection(emu.url))
    scaled = "the real 60 a minute"
    if window != 60:
        scaled = f"60 per {window:g} s: the real minute on a clock {60 / window:g}x fast"
    ideal = n / LIMIT * window
    rows = []

    # 1. one launch, start to end
    emu.admin("POST", "/rate_limit", {"limit": LIMIT, "window": window})
    emu.reset_stats()
    try:
        value, elapsed = launch(n, "launch-a-", window, result_dir)
        throttled = int(emu.admin("GET", "/stats?status=429")["count"])
        posts, total = emu.count("POST"), emu.count()
    finally:
        emu.admin("POST", "/rate_limit", {"limit": None})
    stored, twins, missing = census(emu, "launch-a-", n)
    assert value["created"] == n, value
    rows.append(
        Row(
            "2. bulk",
            f"LinkstatsBulkCreateLinksOperator, {n:,} creates at {scaled}: {total:,} requests "
            f"({posts:,} POSTs, {total - posts} listing), {throttled} answered 429; {stored:,} stored, "
            f"{twins} twins, {missing} missing",
            f"{elapsed:,.1f} s",
            f"{elapsed / ideal:.3f}x ideal ({ideal:.0f} s = N / limit)",
            "<= 1.05x, 0 twins",
            verdict(elapsed <= 1.05 * ideal and twins == 0 and missing == 0),
        )
    )

    # 2. killed at about half, then retried: two task processes
    emu.admin("POST", "/rate_limit", {"limit": LIMIT, "window": window})
    emu.reset_stats()
    child = [sys.executable, "-m", "benchmarks.bulk_create", "--child", "--n", str(n), "--prefix", "launch-b-",
             "--window", str(window), "--result-dir", result_dir]
    try:
        start = time.perf_counter()
        first = subprocess.Popen(child, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        created_before_kill = 0
        while first.poll() is None:
            created_before_kill = emu.count("POST")
            if created_before_kill >= n // 2:
                first.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)
        first.wait()
        killed_at = emu.count("POST")
        retry = subprocess.run(child, env=os.environ.copy(), capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if retry.returncode != 0:
            raise RuntimeError(f"the retried launch failed: {retry.stderr[-2000:]}")
        summary = json.loads(retry.stdout.strip().splitlines()[-1])
        total = emu.count()
        throttled = int(emu.admin("GET", "/stats?status=429")["count"])
    finally:
        emu.admin("POST", "/rate_limit", {"limit": None})
    stored, twins, missing = census(emu, "launch-b-", n)
    floor = n + math.ceil(n / 100)
    rows.append(
        Row(
            "2. bulk",
            f"the same launch killed (SIGKILL) after {killed_at:,} of {n:,} creates had reached the server, then "
            f"retried: {summary['skipped']:,} found by the walk, {summary['created']:,} created; {throttled} "
            f"answered 429; {stored:,} stored, {twins} twins, {missing} missing; both tries {elapsed:,.0f} s",
            f"{total:,} requests",
            f"{total / floor:.3f}x N + ceil(N/100) = {floor:,}",
            "<= 1.00x (+ 429s), 0 twins, 0 missing",
            verdict(total - throttled <= floor and twins == 0 and missing == 0),
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bulk_create [--n 1000] [--window 6]``: both rows, without the rest of ``make bench``."""
    import argparse
    import tempfile

    from benchmarks.common import airflow_env

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N)
    parser.add_argument("--window", type=float, default=WINDOW, help="window of the 60-request limit (s)")
    parser.add_argument("--child", action="store_true", help="run one launch and print its summary (internal)")
    parser.add_argument("--prefix", default="launch-b-")
    parser.add_argument("--result-dir", default=None)
    args = parser.parse_args(argv)
    if args.child:
        value, elapsed = launch(args.n, args.prefix, args.window, args.result_dir or tempfile.gettempdir())
        print(json.dumps({**{k: v for k, v in value.items() if k != "links"}, "seconds": elapsed}))
        return 0
    os.environ.update(airflow_env())
    result_dir = args.result_dir or tempfile.mkdtemp(prefix="linkstats-bench-launch-")
    with EmulatorProcess() as emu:
        rows = run(emu, args.n, window=args.window, result_dir=result_dir)
    for row in rows:
        print(f"| {row.section} | {row.what} | {row.figure} | {row.ratio} | {row.target} | {row.verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
