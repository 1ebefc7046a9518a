"""`make demo`'s warehouse step: a 3-day backfill of ``linkstats_stats_to_warehouse`` into a SQLite
file under the demo's Airflow home (connection ``linkstats_warehouse``), then the table printed.

The clicks are recorded at chosen instants, just after and just before midnight in the account's
zone (America/New_York), through the emulator's traffic endpoint: no redirect per click, so the
step costs a few seconds of seeding and one run per day. ``check`` compares the table with what
was recorded, counted per day of the zone each row names.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import requests

ACCOUNT_ZONE = "America/New_York"
TABLE = "linkstats_link_clicks_daily"
LINKS = 4
DAYS = 3
_recorded: list[tuple[int, dt.datetime, int]] = []  # (link id, instant, count) as seeded


def warehouse_file(home: Path) -> Path:
    return Path(home) / "linkstats_warehouse.db"


def warehouse_env(home: Path) -> dict[str, str]:
    """The example DAG's default connection: Airflow's SQLite provider, a file in the Airflow home."""
    return {"AIRFLOW_CONN_LINKSTATS_WAREHOUSE": json.dumps({"conn_type": "sqlite", "host": str(warehouse_file(home))})}


def warehouse_dates(demo: Any = None) -> list[str]:
    """The last three days, as logical dates of a daily DAG (UTC midnights, oldest first)."""
    today = dt.datetime.now(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return [(today - dt.timedelta(days=n)).isoformat() for n in range(DAYS, 0, -1)]


def prepare_warehouse(emulator: Any, say: Callable[[str], None] = print) -> None:
    """An account in New York, 4 links, clicks 30 s after and before midnight over the last 5 local days."""
    requests.post(
        f"{emulator.url}/__emulator__/accounts/1", json={"timezone": ACCOUNT_ZONE}, timeout=5
    ).raise_for_status()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%H%M%S")
    links = [
        emulator.create_link(url=f"https://example.com/daily/{i}", alias=f"daily-{stamp}-{i}") for i in range(LINKS)
    ]
    zone = ZoneInfo(ACCOUNT_ZONE)
    today = dt.datetime.now(zone).date()
    clicks = []
    for back in range(DAYS + 2, 0, -1):
        day = today - dt.timedelta(days=back)
        for index, link in enumerate(links):
            for moment, count in ((dt.time(0, 0, 30), index + 1), (dt.time(23, 59, 30), 2 * index + 1)):
                at = dt.datetime.combine(day, moment, zone)
                clicks.append({"link_id": link["id"], "at": at.isoformat(), "count": count, "country": "US"})
                _recorded.append((int(link["id"]), at, count))
    answer = requests.post(f"{emulator.url}/__emulator__/traffic", json={"clicks": clicks}, timeout=10)
    answer.raise_for_status()
    say(f"warehouse: {len(clicks)} click rows for {LINKS} links, 30 s after and before midnight in {ACCOUNT_ZONE}")


def check_warehouse(home: Path, say: Callable[[str], None] = print) -> bool:
    """Print the table; True when every loaded day equals the recorded clicks of that day in its zone."""
    from airflow_provider_linkstats.client.warehouse import tz_of

    if not warehouse_file(home).exists():
        say("  warehouse | no table: the runs wrote nothing")
        return False
    with sqlite3.connect(warehouse_file(home)) as db:
        rows = db.execute(f"SELECT day, zone, link_id, clicks FROM {TABLE} ORDER BY day, link_id").fetchall()
        days = db.execute(f"SELECT day, complete FROM {TABLE}_days ORDER BY day").fetchall()
    say(f"  warehouse | {TABLE} ({len(rows)} rows; days loaded: {', '.join(d for d, _ in days)})")
    say("  warehouse |   day         zone        link_id  clicks")
    for day, zone, link_id, clicks in rows:
        say(f"  warehouse |   {day}  {zone:<10}  {link_id:>7}  {clicks:>6}")
    if not rows:
        return False
    zone = rows[0][1]
    expected = Counter()
    for link_id, at, count in _recorded:
        expected[(at.astimezone(tz_of(zone)).date().isoformat(), link_id)] += count
    loaded = {day for day, _ in days}
    want = {(day, link_id): n for (day, link_id), n in expected.items() if day in loaded}
    return {(day, link_id): clicks for day, _, link_id, clicks in rows} == want
