"""Days whose length is not 24 hours, breakdowns asked after an offset change, and breakdown pages
whose counts tie, against the emulator of phpShort 49 (which selects the account's calendar days,
DST-aware, and labels the ``click`` series with the zone's UTC offset at the moment of asking, as
the install's CONVERT_TZ does).

The truth is the emulator's record of every click with its instant, grouped by the account's
calendar day (its IANA zone): every hour of that day must be in exactly one loaded day.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import GENERATIONS, connection_json

UTC = dt.timezone.utc


@pytest.fixture
def emu49(emulators, monkeypatch):
    """The phpShort 49 emulator, reset, behind the default links connection."""
    emulator = emulators("49")
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version="49"))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emulator.analytics_url, "linkstats_analytics", api_version=GENERATIONS["49"]),
    )
    yield emulator
    emulator.reset()


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    path = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_WH", json.dumps({"conn_type": "sqlite", "host": str(path)}))
    return path


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


# (zone, a moment on the night of the change): both directions, west and east of UTC (2026's dates).
DST_NIGHTS = {
    "new-york-fall-back": ("America/New_York", utc("2026-11-01T06:00")),  # 02:00 EDT -> 01:00 EST
    "new-york-spring-forward": ("America/New_York", utc("2026-03-08T07:00")),  # 02:00 EST -> 03:00 EDT
    "sydney-spring-forward": ("Australia/Sydney", utc("2026-10-03T16:00")),  # 02:00 AEST -> 03:00 AEDT
    "sydney-fall-back": ("Australia/Sydney", utc("2026-04-04T16:00")),  # 03:00 AEDT -> 02:00 AEST
}


def clicks_every_hour(emu, zone: str, around: dt.datetime, hours: int = 96, per_hour: int = 3, links: int = 2):
    """``links`` links, each clicked ``per_hour`` times at half past every UTC hour for ``hours``
    hours centred on ``around``; the account in ``zone``."""
    emu.configure_account(timezone=zone)
    first = around - dt.timedelta(hours=hours // 2)
    emu.clock.set(first - dt.timedelta(days=2), freeze=True)
    made = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"dst{i}") for i in range(links)]
    for link in made:
        for hour in range(hours):
            at = first + dt.timedelta(hours=hour, minutes=30)
            emu.record_clicks(link["id"], at=at, count=per_hour, country=("US", "FR", "JP")[hour % 3])
    emu.clock.reset()
    return made


def account_days(emu, zone: str) -> Counter:
    """(link_id, day) -> clicks: the recorded clicks per calendar day of the account's zone."""
    counts: Counter = Counter()
    for click in emu.store.recorded_clicks():
        day = dt.datetime.fromisoformat(click["at"]).astimezone(ZoneInfo(zone)).date().isoformat()
        counts[(int(click["link_id"]), day)] += int(click.get("count", 1))
    return counts


def records(path, sql: str) -> list[tuple]:
    """The rows of ``sql`` from the warehouse: a SQLite file's path, or a SQL hook (PostgreSQL)."""
    if hasattr(path, "get_records"):
        return [tuple(row) for row in path.get_records(sql)]
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def complete_days(path, table: str) -> dict[str, str]:
    return {str(day): zone for day, zone in records(path, f"SELECT day, zone FROM {table}_days WHERE complete = 1")}


def table_counts(path, table: str, column: str = "clicks") -> Counter:
    counts: Counter = Counter()
    for link, day, count in records(path, f"SELECT link_id, day, {column} FROM {table}"):
        counts[(int(link), str(day))] += int(count)
    return counts


def hours_covered(days: dict[str, str]) -> Counter:
    """How many loaded days hold each UTC hour (every loaded day's span, in its ``zone``)."""
    from airflow_provider_linkstats.client.warehouse import ServiceDay

    covered: Counter = Counter()
    for day, zone in days.items():
        span = ServiceDay.of(dt.date.fromisoformat(day), zone)
        hour = span.start
        while hour < span.end:
            covered[hour] += 1
            hour += dt.timedelta(hours=1)
    return covered


def load(table: str, start: dt.datetime, end: dt.datetime, **arguments):
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator
    from tests.conftest import run_operator

    arguments.setdefault("sql_conn_id", "wh")
    operator = LinkstatsLinkStatsToWarehouseOperator(
        task_id="load", table=table,
        data_interval_start=start.isoformat(), data_interval_end=end.isoformat(), **arguments,
    )  # fmt: skip
    return run_operator(operator)[0]


def daily_utc_runs(around: dt.datetime, before: int = 2, after: int = 3) -> list[tuple[dt.datetime, dt.datetime]]:
    midnight = around.replace(hour=0, minute=0)
    return [(midnight + dt.timedelta(days=i), midnight + dt.timedelta(days=i + 1)) for i in range(-before, after)]


def assert_every_hour_once(emu, warehouse, table: str, zone: str) -> tuple[int, int]:
    """Every day marked complete holds exactly the account day's recorded clicks, and the loaded
    days tile time: no hour in two days, none missing between the first and the last."""
    days = complete_days(warehouse, table)
    assert days, "no day was loaded complete"
    covered = hours_covered(days)
    first, last = min(covered), max(covered)
    doubled = sorted(hour for hour, n in covered.items() if n > 1)
    missing = []
    hour = first
    while hour <= last:
        if not covered.get(hour):
            missing.append(hour)
        hour += dt.timedelta(hours=1)
    loaded = table_counts(warehouse, table)
    recorded_in_span = sum(
        int(c.get("count", 1))
        for c in emu.store.recorded_clicks()
        if first <= dt.datetime.fromisoformat(c["at"]) < last + dt.timedelta(hours=1)
    )
    loaded_total = sum(n for (link, day), n in loaded.items() if day in days)
    assert (doubled, missing, loaded_total) == ([], [], recorded_in_span), (
        f"hours in two days {doubled}, hours in none {missing}: {recorded_in_span} recorded, {loaded_total} loaded"
    )
    truth = account_days(emu, zone)
    assert set(days.values()) == {zone}
    for day in days:
        assert {k: v for k, v in loaded.items() if k[1] == day} == {k: v for k, v in truth.items() if k[1] == day}
    return recorded_in_span, loaded_total


@pytest.mark.parametrize("night", sorted(DST_NIGHTS))
def test_daily_utc_runs_across_a_dst_night_load_every_hour_of_the_account_day_once(emu49, warehouse, night):
    """Scheduled runs, each at its time (the service's clock at the interval's end + 10 minutes)."""
    zone, change = DST_NIGHTS[night]
    clicks_every_hour(emu49, zone, change)
    for start, end in daily_utc_runs(change):
        emu49.clock.set(end + dt.timedelta(minutes=10))
        load("clicks", start, end)
    emu49.clock.reset()
    assert_every_hour_once(emu49, warehouse, "clicks", zone)


def breakdown_sums(path, table: str) -> Counter:
    counts: Counter = Counter()
    for link, day, count in records(path, f"SELECT link_id, day, clicks FROM {table}"):
        counts[(int(link), str(day))] += int(count)
    return counts


@pytest.mark.parametrize("night", sorted(DST_NIGHTS))
def test_a_backfill_asked_weeks_after_the_change_and_its_breakdown_equal_the_account_days(emu49, warehouse, night):
    """Every run asked three weeks after the DST night (the service labels the days before it with
    the new offset): the daily table and the breakdown both hold each account day's clicks."""
    zone, change = DST_NIGHTS[night]
    clicks_every_hour(emu49, zone, change)
    emu49.clock.set(change + dt.timedelta(days=21))
    reports = []
    for start, end in daily_utc_runs(change):
        emu49.stats.reset()
        reports.append(load("clicks", start, end))
        served = emu49.stats.count(path_prefix="/stats") + emu49.stats.count(path_prefix="/links")
        assert served == reports[-1]["requests"]
        load("by_country", start, end, breakdown="country")
    emu49.clock.reset()
    days = complete_days(warehouse, "by_country")
    assert days == complete_days(warehouse, "clicks")
    daily, by_country = table_counts(warehouse, "clicks"), breakdown_sums(warehouse, "by_country")
    differ = {key: (daily.get(key, 0), by_country.get(key, 0)) for key in daily.keys() | by_country.keys()
              if key[1] in days and daily.get(key, 0) != by_country.get(key, 0)}  # fmt: skip
    assert not differ, f"(link, day): (daily table, breakdown) {sorted(differ.items())}"
    assert_every_hour_once(emu49, warehouse, "clicks", zone)
    truth = account_days(emu49, zone)
    assert {k: v for k, v in breakdown_sums(warehouse, "by_country").items() if k[1] in days} == {
        k: v for k, v in truth.items() if k[1] in days
    }
    # The cost: the listing, a request per link, and one per link and day its labels do not match.
    assert all(report["requests"] == report["minimum_requests"] for report in reports)
    assert max(report["requests"] for report in reports) <= 1 + 2 * 2


# -- breakdown pages whose counts tie -------------------------------------------------------------------


def tied_breakdown_service(values: int = 150):
    """Answers as phpAnalytics 31 does: one website; its ``country`` breakdown has ``values`` rows,
    every count the same, and the order of rows that tie differs from one request to the next (MySQL
    promises no order for ties: each page is its own query). ``sort_by=value`` is honoured."""
    import random

    site = {"id": 7, "domain": "shop.example.com", "favorite": False, "favorited_at": None}
    rows = [{"value": f"C{i:03d}", "count": "2"} for i in range(values)]
    asked = []

    def answer(request):
        query = dict(request["query"])
        path = request["path"]
        if path.endswith("/websites"):
            return ("respond", 200, {"data": [site], "meta": {"current_page": 1, "last_page": 1, "total": 1}})
        asked.append(query)
        per_page = int(query.get("per_page", 10)) if query.get("per_page") in ("10", "25", "50", "100") else 10
        page = int(query.get("page", 1))
        if query.get("sort_by") == "value":
            ordered = sorted(rows, key=lambda row: row["value"], reverse=query.get("sort") == "desc")
        else:
            ordered = list(rows)
            random.Random(len(asked)).shuffle(ordered)  # ties: any order, per query
        last = max(1, -(-len(ordered) // per_page))
        body = {
            "current_page": page, "data": ordered[(page - 1) * per_page : page * per_page], "last_page": last,
            "per_page": per_page, "total": len(ordered), "from": (page - 1) * per_page + 1,
            "to": min(page * per_page, len(ordered)), "next_page_url": None if page >= last else f"?page={page + 1}",
            "prev_page_url": None, "path": path, "status": 200,
        }  # fmt: skip
        return ("respond", 200, body)

    return answer


def test_a_breakdown_whose_counts_tie_is_read_whole_once(scripted, warehouse, monkeypatch):
    """150 countries with 2 visitors each: two pages of 100; read by count, the tie order changes
    between the pages' queries, so rows repeat and others are dropped."""
    from airflow_provider_linkstats.operators.warehouse import LinkstatsWebsiteStatsToWarehouseOperator
    from tests.conftest import run_operator

    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(scripted.url + "/api/v1", "linkstats_analytics", api_version="31"),
    )
    scripted._server.default = tied_breakdown_service()
    day = dt.datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=3)
    operator = LinkstatsWebsiteStatsToWarehouseOperator(
        task_id="load", sql_conn_id="wh", table="by_country", breakdown="country",
        data_interval_start=day.isoformat(), data_interval_end=(day + dt.timedelta(days=1)).isoformat(),
    )  # fmt: skip
    report = run_operator(operator)[0]
    with sqlite3.connect(warehouse) as db:
        loaded = db.execute("SELECT value, count FROM by_country").fetchall()
    values = [value for value, _ in loaded]
    assert (len(values), len(set(values))) == (150, 150), f"{len(values)} rows, {len(set(values))} distinct"
    assert {count for _, count in loaded} == {2}
    stats = [r for r in scripted.requests if "/stats/" in r["path"]]
    assert len(stats) == 2 and all(dict(r["query"]).get("per_page") == "100" for r in stats)
    assert report["requests"] == report["minimum_requests"] == 1 + 2  # the listing, two pages of 100


# -- runs as users run them -----------------------------------------------------------------------------


class RecordingLog:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.warnings: list[str] = []  # the lines said as WARNING

    def info(self, message, *args):
        self.lines.append(message % args if args else message)

    def warning(self, message, *args):
        self.info(message, *args)
        self.warnings.append(self.lines[-1])

    debug = error = exception = info


def test_an_empty_interval_says_which_day_it_loaded_and_the_schedule_that_follows_logical_dates(emu49, warehouse):
    """Airflow 3's schedule="@daily" (a trigger timetable) in UTC for an account in New York: its run
    of logical date 2026-10-12 loads New York's 10th (the 11th ends at 04:00 UTC on the 12th)."""
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator
    from tests.conftest import run_operator

    clicks_every_hour(emu49, "America/New_York", utc("2026-10-11T12:00"), hours=24)
    moment = utc("2026-10-12T00:00").isoformat()
    operator = LinkstatsLinkStatsToWarehouseOperator(
        task_id="load", sql_conn_id="wh", table="clicks", data_interval_start=moment, data_interval_end=moment
    )
    log = RecordingLog()
    operator._log = operator._cached_logger = log  # the logger Airflow 2.11 / 3 caches on the task
    report = run_operator(operator)[0]
    assert report["days"] == ["2026-10-10"]
    (line,) = [line for line in log.lines if "data interval is empty" in line]
    assert line in log.warnings  # a WARNING: the run's schedule is likely not what its author meant (issue 44)
    assert "America/New_York that ended last before it: 2026-10-10" in line
    assert 'schedule=CronDataIntervalTimetable("0 0 * * *", timezone=\'America/New_York\')' in line


def test_a_load_with_nothing_to_fetch_reports_the_requests_it_made_as_the_minimum(emu49, warehouse):
    """An account without links: the listing's one page is the whole cost, and the minimum."""
    report = load("clicks", utc("2026-10-11T00:00"), utc("2026-10-12T00:00"))
    assert report["links"] == report["fetched"] == 0
    assert report["requests"] == report["minimum_requests"] == 1


def test_a_day_marked_complete_found_short_by_a_later_run_is_reloaded(emu, warehouse):
    """The scheduler's run of the 6th ran (and marked the day complete) before 3 of its clicks were
    counted (Airflow 2.11's backfill then skips that run: it succeeded). The next run sees the
    link's counter grown by 4 where its answer from the 7th holds 1, and loads the 6th again."""
    link = emu.store.add_link(url="https://example.com/late", alias="late")
    sixth = utc("2026-10-06T00:00")
    emu.record_clicks(link["id"], at=sixth + dt.timedelta(hours=10), count=2)
    emu.clock.set(sixth + dt.timedelta(days=1, minutes=10))
    assert load("clicks", sixth, sixth + dt.timedelta(days=1))["days"] == ["2026-10-06"]
    emu.record_clicks(link["id"], at=sixth + dt.timedelta(hours=20), count=3)  # counted late
    emu.record_clicks(link["id"], at=sixth + dt.timedelta(days=1, hours=10), count=1)
    emu.clock.set(sixth + dt.timedelta(days=2, minutes=10))
    emu.stats.reset()
    report = load("clicks", sixth + dt.timedelta(days=1), sixth + dt.timedelta(days=2))
    emu.clock.reset()
    loaded = table_counts(warehouse, "clicks")
    assert loaded == {(link["id"], "2026-10-06"): 5, (link["id"], "2026-10-07"): 1}, loaded
    assert complete_days(warehouse, "clicks") == {"2026-10-06": "UTC", "2026-10-07": "UTC"}
    assert report["days"] == ["2026-10-06", "2026-10-07"]
    # the pass that found it (listing + 1) and the pass from the 6th (listing + 1)
    served = emu.stats.count(path_prefix="/stats") + emu.stats.count(path_prefix="/links")
    assert served == report["requests"] == report["minimum_requests"] == 4


def test_a_day_loaded_incomplete_before_a_dst_change_is_reloaded_after_it(emu49, warehouse):
    """Sydney springs forward on 2026-10-04: a manual run during the 3rd (AEST) loads it incomplete;
    the next run, after the change, reloads it (the day's zone is the account's, not the offset)."""
    emu49.configure_account(timezone="Australia/Sydney")
    emu49.clock.set(utc("2026-10-01T00:00"), freeze=True)
    link = emu49.store.add_link(url="https://example.com/sydney", alias="sydney")
    emu49.record_clicks(link["id"], at=utc("2026-10-03T00:00"))  # 10:00 AEST on the 3rd
    emu49.clock.set(utc("2026-10-03T10:00"))  # 20:00 on the 3rd: the day is not over
    first = load("clicks", utc("2026-10-02T14:00"), utc("2026-10-03T14:00"))
    assert first["days"] == ["2026-10-03"]
    emu49.record_clicks(link["id"], at=utc("2026-10-03T12:00"))  # 22:00 AEST on the 3rd
    emu49.clock.set(utc("2026-10-05T00:10"))  # AEDT now
    second = load("clicks", utc("2026-10-03T14:00"), utc("2026-10-04T13:00"))
    emu49.clock.reset()
    assert second["days"] == ["2026-10-03", "2026-10-04"]  # the 3rd again, with the 4th (23 hours)
    assert table_counts(warehouse, "clicks") == {(link["id"], "2026-10-03"): 2}
    assert complete_days(warehouse, "clicks") == {"2026-10-03": "Australia/Sydney", "2026-10-04": "Australia/Sydney"}
