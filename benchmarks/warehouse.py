"""Daily statistics into a warehouse at scale (issue 33): requests per run against the minimum.

    python -m benchmarks.warehouse [--links 10000] [--clicked 500] [--days 7] [--json rows.json]

A fresh emulator (phpShort 44, no rate limit) in its own process with ``--links`` links (seeded
through its admin API). Seven days are played on the emulator's clock: each day ``--clicked``
random links get 1 to 3 clicks at instants of that day, then, 5 minutes after the day ends, the
daily load (``LinkstatsLinkStatsToWarehouseOperator`` into a SQLite file) runs for it in this
process. The emulator counts the requests of each run; the minimum is the listing's pages plus one
request per link clicked since the last run. The first run writes a new table: no counters are
saved, so it fetches every link once (a counter of 0 may be a reset); it is reported apart. The
naive loop asks each link's statistics every day (one request per link, after the same listing).
Time at a real install's 60 requests a minute; peak RSS of this process (Airflow and the provider
imported first). The check: each day's table rows add up to the clicks recorded that day, link by
link.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import resource
import sqlite3
import sys
import time
from collections import Counter

from benchmarks.common import API_KEY, API_PREFIX, EmulatorProcess, Row, airflow_env, verdict

FIRST_DAY = dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc)
RATE = 60  # requests a minute on a real install


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def minutes(requests: int) -> str:
    total = requests / RATE
    return f"{total:.0f} min" if total < 90 else f"{total / 60:.1f} h"


def play(links: int, clicked: int, days: int) -> list[Row]:
    home = airflow_env()
    os.environ.update(home)
    database = os.path.join(home["AIRFLOW_HOME"], "warehouse.db")
    os.environ["AIRFLOW_CONN_BENCH_WAREHOUSE"] = json.dumps({"conn_type": "sqlite", "host": database})
    random.seed(33)
    with EmulatorProcess() as emulator:
        os.environ["AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT"] = json.dumps(
            {"conn_type": "linkstats_links", "host": emulator.url + API_PREFIX, "password": API_KEY,
             "extra": {"api_version": "44"}}
        )  # fmt: skip
        emulator.admin("POST", "/clock", {"now": (FIRST_DAY - dt.timedelta(days=1)).isoformat(), "freeze": True})
        seeded = emulator.admin(
            "POST", "/links", {"count": links, "alias_prefix": "wh-", "fields": {"url": "https://example.com/daily"}}
        )
        ids = list(range(seeded["first_id"], seeded["last_id"] + 1))
        from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator

        before = peak_mb()
        per_run, truth, started = [], Counter(), time.perf_counter()
        for index in range(days):
            day = FIRST_DAY + dt.timedelta(days=index)
            emulator.admin("POST", "/clock", {"now": (day + dt.timedelta(minutes=10)).isoformat(), "freeze": True})
            clicks = []
            for link_id in random.sample(ids, clicked):
                count = random.randint(1, 3)
                at = day + dt.timedelta(seconds=random.randint(700, 86_399))
                clicks.append({"link_id": link_id, "at": at.isoformat(), "count": count})
                truth[(link_id, day.date().isoformat())] += count
            emulator.admin("POST", "/traffic", {"clicks": clicks})
            emulator.admin(
                "POST", "/clock", {"now": (day + dt.timedelta(days=1, minutes=5)).isoformat(), "freeze": True}
            )
            emulator.reset_stats()
            operator = LinkstatsLinkStatsToWarehouseOperator(
                task_id="bench",
                sql_conn_id="bench_warehouse",
                table="clicks",
                data_interval_start=day.isoformat(),
                data_interval_end=(day + dt.timedelta(days=1)).isoformat(),
            )
            t0 = time.perf_counter()
            result = operator.execute({})
            seconds = time.perf_counter() - t0
            served = emulator.count()
            per_run.append((served, result["minimum_requests"], result["fetched"], seconds))
        peak = peak_mb()
        with sqlite3.connect(database) as db:
            loaded = {(link, day): n for link, day, n in db.execute("SELECT link_id, day, clicks FROM clicks")}
    correct = loaded == dict(truth)
    pages = math.ceil(links / 100)
    # The first run writes a new table: with no counters saved it fetches every link (a counter of
    # 0 may be a reset), once; the daily figure is the runs after it.
    first_run, *daily = per_run
    requests = [served for served, *_ in daily]
    minimum = [low for _, low, *_ in daily]
    naive = pages + links
    mean = sum(requests) / len(requests)
    rows = [
        Row(
            "7. warehouse",
            f"daily load of {links:,} links, {clicked} clicked a day, runs 2-{days}: requests per run (min/mean/max)",
            f"{min(requests)} / {mean:.0f} / {max(requests)}",
            f"{max(r / m for r, m in zip(requests, minimum, strict=True)):.3f}x the minimum",
            "= the minimum (listing pages + links clicked since the last run)",
            verdict(all(r <= m for r, m in zip(requests, minimum, strict=True)) and correct),
        ),
        Row(
            "7. warehouse",
            "the first run, into a new table (no counters saved: every link fetched once)",
            f"{first_run[0]:,} requests",
            f"{first_run[0] / first_run[1]:.3f}x the minimum",
            f"= listing pages + every link ({pages + links:,})",
            verdict(first_run[0] <= first_run[1] == pages + links),
        ),
        Row(
            "7. warehouse",
            "the same at a real install's 60 requests a minute, per day",
            minutes(round(mean)),
            f"{naive / mean:.1f}x fewer than the naive loop ({naive:,} requests, {minutes(naive)})",
            "",
            "",
        ),
        Row(
            "7. warehouse",
            "emulator time per run (no rate limit), peak RSS of the task's process",
            f"{sum(s for *_, s in daily) / len(daily):.1f} s (the first run {first_run[3]:.0f} s); {peak:.0f} MB "
            f"({before:.0f} MB before the first run)",
            "",
            "",
            "",
        ),
        Row(
            "7. warehouse",
            "table equals the recorded clicks per day, every link",
            "yes" if correct else "NO",
            "",
            "",
            verdict(correct),
        ),
    ]
    print(
        f"runs: {per_run}; took {time.perf_counter() - started:.0f} s; table {'==' if correct else '!='} truth",
        file=sys.stderr,
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=10_000)
    parser.add_argument("--clicked", type=int, default=500)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--json", help="write the rows here as JSON (for benchmarks/run.py)")
    args = parser.parse_args(argv)
    rows = play(args.links, args.clicked, args.days)
    for row in rows:
        print(f"| {row.section} | {row.what} | {row.figure} | {row.ratio} | {row.target} | {row.verdict} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump([row.__dict__ for row in rows], handle)
    return 0 if all(row.verdict != "MISSED" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
