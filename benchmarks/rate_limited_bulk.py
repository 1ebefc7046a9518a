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
