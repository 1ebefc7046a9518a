"""A bulk delete under a real install's rate limit: 300 links at 60 requests a minute.

The emulator's limits are switched on (its admin route) after the seeding, so only the deletes
count. The ideal is N / limit: no client can finish sooner without 429s. The operator's rate
limiter should get within 10 % of it and meet at most 2 answers of 429 (another client of the
same address could always take a slot it counted on).
"""

from __future__ import annotations

import time

from benchmarks.common import LINKS_CONN_ID, EmulatorProcess, Row, verdict

LIMIT = 60  # requests a minute, per client address, as on a real install
WORKERS = 8


def run(emu: EmulatorProcess, ids: list[int], *, window: float = 60.0) -> list[Row]:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator

    n = len(ids)
    operator = LinkstatsDeleteLinkOperator(
        task_id="bench_rate_limited_delete", link_ids=ids, max_workers=WORKERS, linkstats_conn_id=LINKS_CONN_ID
    )
    operator.hook = LinkstatsLinksHook(LINKS_CONN_ID, rate_limit_window=window)  # scaled only with --quick
    emu.admin("POST", "/rate_limit", {"limit": LIMIT, "window": window})
    emu.reset_stats()
    try:
        start = time.perf_counter()
        deleted = operator.execute(context={})
        elapsed = time.perf_counter() - start
        throttled = int(emu.admin("GET", "/stats?status=429")["count"])
        deletes = emu.count("DELETE")
    finally:
        emu.admin("POST", "/rate_limit", {"limit": None})
    assert isinstance(deleted, list) and len(deleted) == n, f"{len(deleted)} of {n} deleted"
    ideal = n / LIMIT * window
    scaled = "" if window == 60 else f" (window scaled to {window:g} s)"
    return [
        Row(
            "2. bulk",
            f"LinkstatsDeleteLinkOperator, {n} deletes at {LIMIT} a minute{scaled}: "
            f"{deletes} DELETEs sent, {throttled} answered 429",
            f"{elapsed:,.1f} s",
            f"{elapsed / ideal:.3f}x ideal ({ideal:.0f} s = N / limit)",
            "<= 1.10x, <= 2 x 429",
            verdict(elapsed <= 1.1 * ideal and throttled <= 2),
        )
    ]


LEARNED_LIMIT, LEARNED_WINDOW = 20, 10.0  # a server that counts 20 requests per 10 s (issue 20)


def run_learned(emu: EmulatorProcess, ids: list[int]) -> list[Row]:
    """The same delete behind a 20-per-10-s limit, the window not told to the hook: it learns it.

    Assuming one-minute windows (the limiter before issue 20) paced it at 20 a minute: 60 deletes
    took 181 s where the ideal is 30 s.
    """
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator

    n = len(ids)
    operator = LinkstatsDeleteLinkOperator(
        task_id="bench_learned_window_delete", link_ids=ids, max_workers=WORKERS, linkstats_conn_id=LINKS_CONN_ID
    )
    operator.hook = LinkstatsLinksHook(LINKS_CONN_ID)  # no rate_limit_window: learned from the answers
    emu.admin("POST", "/rate_limit", {"limit": LEARNED_LIMIT, "window": LEARNED_WINDOW})
    emu.reset_stats()
    try:
        start = time.perf_counter()
        deleted = operator.execute(context={})
        elapsed = time.perf_counter() - start
        throttled = int(emu.admin("GET", "/stats?status=429")["count"])
        deletes = emu.count("DELETE")
    finally:
        emu.admin("POST", "/rate_limit", {"limit": None})
    assert isinstance(deleted, list) and len(deleted) == n, f"{len(deleted)} of {n} deleted"
    limiter = operator.hook.client.limiter
    ideal = n / LEARNED_LIMIT * LEARNED_WINDOW
    return [
        Row(
            "2. bulk",
            f"LinkstatsDeleteLinkOperator, {n} deletes at {LEARNED_LIMIT} per {LEARNED_WINDOW:g} s, window not "
            f"configured: learned {limiter.window:.1f} s from {limiter.learned_from}; "
            f"{deletes} DELETEs sent, {throttled} answered 429",
            f"{elapsed:,.1f} s",
            f"{elapsed / ideal:.3f}x ideal ({ideal:.0f} s = N / limit x window)",
            "<= 1.30x",
            verdict(elapsed <= 1.3 * ideal),
        )
    ]


def main(argv: list[str] | None = None) -> int:
    """Both rate-limited rows side by side, without the rest of ``make bench``.

    ``python -m benchmarks.rate_limited_bulk [--window 60]``: the 300 deletes at 60 per ``window``
    seconds (60 as on a real install; 6 to be quick), then the 60 deletes behind 20 per 10 s.
    """
    import argparse
    import os
    import shutil

    from benchmarks.common import airflow_env, connection_env

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=60.0, help="window of the 60-request limit (s)")
    args = parser.parse_args(argv)
    env = airflow_env()
    os.environ.update(env)  # before anything imports Airflow
    try:
        with EmulatorProcess() as emu:
            os.environ.update(connection_env(emu.url))
            ids = [r["id"] for r in emu.seed_links(360)]
            rows = run(emu, ids[:300], window=args.window) + run_learned(emu, ids[300:360])
    finally:
        shutil.rmtree(env["AIRFLOW_HOME"], ignore_errors=True)
    print(f"Load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| # | Measurement | Figure | Ratio | Target | Met |\n|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.section} | {row.what} | {row.figure} | {row.ratio} | {row.target} | {row.verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
