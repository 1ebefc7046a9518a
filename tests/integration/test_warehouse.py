"""Statistics into a warehouse, against the emulator and a real database (SQLite; PostgreSQL in
tests/integration/test_warehouse_postgres.py): the loaded table equals the clicks the emulator
recorded, counted per day of the zone the generation buckets in, whatever re-runs, retries and
overlapping backfills happened.

The truth is the emulator's own record of each click and visit with its time
(``store.recorded_clicks``, ``recorded_pageviews``), grouped here by day of the zone the generation
counts in (UTC on phpShort 44-45 and phpAnalytics; on phpShort 46+ the account's zone, whose rows
the service labels with the offset of the moment asked): not the statistics answers the load read.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from zoneinfo import ZoneInfo

import pytest
import requests

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from tests.conftest import GENERATIONS, connection_json, fails_without_retry

BROWSER = {"User-Agent": "Mozilla/5.0 (X11; Linux) Firefox/120"}
FIRST_DAY = dt.date(2026, 10, 5)  # a Monday, weeks before the tests' real now
DAYS = 4
# Local times of the clicks: just after midnight, midday, just before midnight.
MOMENTS = (dt.time(0, 0, 20), dt.time(12, 0), dt.time(23, 59, 40))


@pytest.fixture(params=sorted(GENERATIONS))
def emu_gen(request, emulators, monkeypatch):
    """The emulator of one generation (phpShort 44 + phpAnalytics 3.x, then 49 + 31), reset."""
    emulator = emulators(request.param)
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version=request.param))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emulator.analytics_url, "linkstats_analytics", api_version=GENERATIONS[request.param]),
    )
    yield emulator
    emulator.reset()


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A SQLite file behind the connection ``wh`` (Airflow's SQLite provider)."""
    path = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_WH", json.dumps({"conn_type": "sqlite", "host": str(path)}))
    return path


def clicks_near_midnight(emu, zone: str, links: int = 5) -> list[dict]:
    """Links clicked on FIRST_DAY.. in ``zone`` at MOMENTS (link i on days >= i; the last never)."""
    emu.configure_account(timezone=zone)
    tz = ZoneInfo(zone)
    emu.clock.set(dt.datetime.combine(FIRST_DAY - dt.timedelta(days=3), dt.time(12), tz), freeze=True)
    made = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"wh{i}") for i in range(links)]
    for offset in range(DAYS):
        for moment in MOMENTS:
            emu.clock.set(dt.datetime.combine(FIRST_DAY + dt.timedelta(days=offset), moment, tz), freeze=True)
            for index, link in enumerate(made[:-1]):
                if index <= offset:
                    answer = requests.get(f"{emu.url}/{link['alias']}", headers=BROWSER, allow_redirects=False)
                    assert answer.status_code == 302
    emu.clock.reset()
    return made


def counted_in(emu, account_zone: str, service: str = "links") -> str:
    """The zone the emulator's generation counts days in, for an account in ``account_zone``, now."""
    from airflow_provider_linkstats.client.generations import generation_for
    from airflow_provider_linkstats.client.warehouse import bucketing_zone

    version = emu.links_version if service == "links" else emu.analytics_version
    return bucketing_zone(generation_for(service, version), account_zone, dt.datetime.now(dt.timezone.utc))


def truth(emu, zone: str) -> set[tuple]:
    """(link_id, day, zone, clicks) from the emulator's recorded clicks, per day of ``zone``."""
    from airflow_provider_linkstats.client.warehouse import tz_of

    counts: Counter = Counter()
    for click in emu.store.recorded_clicks():
        day = dt.datetime.fromisoformat(click["at"]).astimezone(tz_of(zone)).date().isoformat()
        counts[(int(click["link_id"]), day)] += int(click.get("count", 1))
    return {(link, day, zone, n) for (link, day), n in counts.items()}


def utc_days(first: dt.date, count: int) -> list[tuple[dt.datetime, dt.datetime]]:
    start = dt.datetime.combine(first, dt.time(), dt.timezone.utc)
    return [(start + dt.timedelta(days=i), start + dt.timedelta(days=i + 1)) for i in range(count)]


# Daily UTC runs covering every day of the traffic in any zone: the day before to the day after.
RUNS = utc_days(FIRST_DAY - dt.timedelta(days=1), DAYS + 3)


def link_load(table: str = "clicks", interval=None, **arguments):
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator

    start, end = interval
    return LinkstatsLinkStatsToWarehouseOperator(
        task_id="load",
        sql_conn_id=arguments.pop("sql_conn_id", "wh"),
        table=table,
        data_interval_start=start.isoformat(),
        data_interval_end=end.isoformat(),
        **arguments,
    )


def run(operator):
    from tests.conftest import run_operator

    return run_operator(operator)[0]


def rows(path, table: str = "clicks") -> set[tuple]:
    with sqlite3.connect(path) as db:
        return set(db.execute(f"SELECT link_id, day, zone, clicks FROM {table}").fetchall())


def loaded_days(zone: str) -> set[str]:
    days = set()
    for start, end in RUNS:
        from airflow_provider_linkstats.client.warehouse import days_ending_in

        days |= {d.isoformat() for d in days_ending_in(start, end, zone)}
    return days


@pytest.mark.parametrize("account_zone", ["America/New_York", "Asia/Kolkata"])
def test_a_backfill_equals_the_clicks_per_account_day_at_the_minimum_cost(emu_gen, warehouse, account_zone):
    clicks_near_midnight(emu_gen, account_zone)
    zone = counted_in(emu_gen, account_zone)
    expected = {row for row in truth(emu_gen, zone) if row[1] in loaded_days(zone)}
    assert len({row[1] for row in expected}) >= DAYS  # clicks near midnight: more UTC days than local ones
    reports = []
    for interval in RUNS:
        emu_gen.stats.reset()
        report = run(link_load(interval=interval))
        statistics = emu_gen.stats.count(path_prefix="/stats")
        listing = emu_gen.stats.count(path_prefix="/links")
        assert statistics + listing == report["requests"] == report["minimum_requests"]
        reports.append(report)
    assert rows(warehouse) == expected
    assert all(report["zone"] == zone for report in reports)
    # The first run into a new table fetches every link (a counter of 0 may be a reset); after it,
    # the link never clicked is never fetched, and a run after the last click fetches nothing, unless
    # phpShort 46+ labels these days with another offset than theirs (asked in November for October
    # in New York): a click a minute before the last day's midnight carries the label of a day that
    # ends an hour after the account's, so the next run asks those links once more (and nothing else).
    assert reports[0]["fetched"] == 5
    assert all(report["fetched"] <= 4 for report in reports[1:])
    relabelled = emu_gen.links_version == "49" and ZoneInfo(account_zone).utcoffset(
        dt.datetime.combine(FIRST_DAY, dt.time())
    ) != dt.datetime.now(ZoneInfo(account_zone)).utcoffset()
    assert reports[-1]["fetched"] == (4 if relabelled else 0) and reports[-1]["requests"] == 1 + reports[-1]["fetched"]


def test_re_runs_a_retry_after_a_kill_and_overlapping_backfills_leave_the_same_rows(emu_gen, warehouse, monkeypatch):
    clicks_near_midnight(emu_gen, "America/New_York")
    zone = counted_in(emu_gen, "America/New_York")
    expected = {row for row in truth(emu_gen, zone) if row[1] in loaded_days(zone)}
    for interval in RUNS:
        run(link_load(interval=interval))
    assert rows(warehouse) == expected
    for interval in reversed(RUNS):  # every run again, newest first
        run(link_load(interval=interval))
    assert rows(warehouse) == expected

    # A task killed after writing the first of three days: its retry completes the table.
    from airflow_provider_linkstats.drivers.sinks import SqlSink

    three_days = (RUNS[1][0], RUNS[3][1])
    with sqlite3.connect(warehouse) as db:
        db.execute("DELETE FROM clicks")
        db.execute("DELETE FROM clicks_counters")
    written = SqlSink.write_day

    def killed_after_one(self, day, *args, **kwargs):
        written(self, day, *args, **kwargs)
        raise SystemExit("killed")

    monkeypatch.setattr(SqlSink, "write_day", killed_after_one)
    with pytest.raises(SystemExit):
        run(link_load(interval=three_days))
    monkeypatch.setattr(SqlSink, "write_day", written)
    assert len({row[1] for row in rows(warehouse)}) <= 1
    # A failure while reading (the service answers 500 past the client's retries): nothing half-written.
    emu_gen.faults.fail_next(20, status=500, path_prefix="/stats")
    with pytest.raises(Exception, match="500"):
        run(link_load(interval=three_days))
    emu_gen.faults.clear()
    run(link_load(interval=three_days))
    for interval in RUNS:
        run(link_load(interval=interval))
    assert rows(warehouse) == expected

    # Two backfills at once, overlapping: days 1-4 and 3-7.
    with sqlite3.connect(warehouse) as db:
        db.execute("DELETE FROM clicks")
        db.execute("DELETE FROM clicks_counters")
    # Two workers: two processes, each a backfill of its own, at the same time.
    workers = [
        concurrently(RUNS[:4], "wh"),
        concurrently(RUNS[2:], "wh"),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert rows(warehouse) == expected


def test_a_breakdown_per_link_and_day(emu_gen, warehouse):
    clicks_near_midnight(emu_gen, "Asia/Kolkata")
    zone = counted_in(emu_gen, "Asia/Kolkata")
    for interval in RUNS:
        run(link_load("by_country", interval=interval, breakdown="country"))
    with sqlite3.connect(warehouse) as db:
        loaded = db.execute("SELECT link_id, day, zone, statistic, clicks FROM by_country").fetchall()
    per_day = Counter()
    for link, day, row_zone, statistic, clicks in loaded:
        assert row_zone == zone and statistic == "country"
        per_day[(link, day, zone)] += clicks
    expected = {row for row in truth(emu_gen, zone) if row[1] in loaded_days(zone)}
    assert {(*key, n) for key, n in per_day.items()} == expected


@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_files_one_per_day_equal_the_clicks(emu, tmp_path, file_format):
    clicks_near_midnight(emu, "America/New_York")
    zone = counted_in(emu, "America/New_York")
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator

    target = tmp_path / "clicks"
    for start, end in RUNS * 2:  # twice: the files are the same
        operator = LinkstatsLinkStatsToWarehouseOperator(
            task_id="files",
            path=str(target),
            file_format=file_format,
            data_interval_start=start.isoformat(),
            data_interval_end=end.isoformat(),
        )
        result = run(operator)
        assert result["asset"] == str(target)
    found = set()
    assert not list(target.glob(f"*.{file_format}"))  # one file per day and selection: <day>/<selection>.<format>
    for day_file in sorted(target.glob(f"*/*.{file_format}")):
        text = day_file.read_text()
        if file_format == "jsonl":
            records = [json.loads(line) for line in text.splitlines()]
        else:
            import csv

            records = list(csv.DictReader(text.splitlines()))
        for record in records:
            assert record["day"] == day_file.parent.name
            found.add((int(record["link_id"]), record["day"], record["zone"], int(record["clicks"])))
    assert found == {row for row in truth(emu, zone) if row[1] in loaded_days(zone)}


def visits_near_midnight(emu, zone: str) -> dict:
    """Pageviews of two visitors on a website at MOMENTS of each day (in ``zone``)."""
    emu.configure_account(timezone=zone)
    tz = ZoneInfo(zone)
    emu.clock.set(dt.datetime.combine(FIRST_DAY - dt.timedelta(days=3), dt.time(12), tz), freeze=True)
    answer = requests.post(
        f"{emu.analytics_url}/public/api/v1/websites",
        data={"domain": "shop.example.com"},
        headers={"Authorization": f"Bearer {emu.api_key}", "Accept": "application/json"},
    )
    site = answer.json()["data"]
    for offset in range(DAYS):
        for moment in MOMENTS:
            emu.clock.set(dt.datetime.combine(FIRST_DAY + dt.timedelta(days=offset), moment, tz), freeze=True)
            for visitor in range(1 + offset % 2):
                requests.post(
                    f"{emu.analytics_url}/api/event",
                    data={
                        "page": "https://shop.example.com/p",
                        "visitor": f"v{visitor}",
                        "referrer": "https://a.example/",
                    },
                    headers=BROWSER,
                )
    emu.clock.reset()
    return site


def test_websites_pageviews_per_day_of_the_generation_zone(emu_gen, warehouse):
    from airflow_provider_linkstats.operators.warehouse import LinkstatsWebsiteStatsToWarehouseOperator

    account_zone = "Asia/Kolkata"
    site = visits_near_midnight(emu_gen, account_zone)
    zone = counted_in(emu_gen, account_zone, "analytics")
    assert zone == "UTC"  # phpAnalytics 3.x and 31 alike
    for start, end in RUNS:
        run(
            LinkstatsWebsiteStatsToWarehouseOperator(
                task_id="sites",
                sql_conn_id="wh",
                table="sites",
                data_interval_start=start.isoformat(),
                data_interval_end=end.isoformat(),
            )
        )
    pageviews: Counter = Counter()
    for event in emu_gen.store.recorded_pageviews():
        if event["event"] is None:
            pageviews[dt.datetime.fromisoformat(event["at"]).astimezone(ZoneInfo(zone)).date().isoformat()] += 1
    with sqlite3.connect(warehouse) as db:
        loaded = db.execute("SELECT website_id, day, zone, pageviews, visitors FROM sites").fetchall()
    days = loaded_days(zone)
    assert {(int(site["id"]), day, zone, n) for day, n in pageviews.items() if day in days} == {
        row[:4] for row in loaded
    }
    assert all(0 < row[4] <= row[3] for row in loaded)


def concurrently(intervals, sql_conn_id: str):
    """A forked process (a second worker) that loads ``intervals`` one after the other; exit code 0 on success."""
    import multiprocessing
    import os

    def work() -> None:
        try:
            for interval in intervals:
                run(link_load(interval=interval, sql_conn_id=sql_conn_id))
        except BaseException:  # noqa: BLE001 - the exit code says it
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)

    return multiprocessing.get_context("fork").Process(target=work)


def test_bad_input_fails_before_any_request(emu, warehouse, monkeypatch):
    now = dt.datetime.now(dt.timezone.utc)
    cases = [
        ({"table": "clicks; DROP TABLE x"}, LinkstatsInputError, "table"),
        ({"table": "1clicks"}, LinkstatsInputError, "table"),
        ({"breakdown": "colour"}, LinkstatsInputError, "breakdown"),
        ({"interval": (now + dt.timedelta(days=3), now + dt.timedelta(days=4))}, LinkstatsInputError, "future"),
        ({"sql_conn_id": "no_such_connection"}, Exception, "no_such_connection"),
    ]
    for arguments, error, words in cases:
        emu.stats.reset()
        arguments = {"interval": RUNS[0], **arguments}
        operator = link_load(arguments.pop("table", "clicks"), **arguments)
        if error is LinkstatsInputError:
            with fails_without_retry(LinkstatsInputError, match=words):
                run(operator)
        else:
            with pytest.raises(error, match=words):
                run(operator)
        assert emu.stats.count() == 0, arguments


def test_the_rows_stay_out_of_xcom_and_the_table_is_the_asset(emu, warehouse):
    clicks_near_midnight(emu, "UTC")
    result = run(link_load(interval=RUNS[2]))
    assert set(result) >= {"days", "zone", "rows", "requests", "minimum_requests", "asset"}
    assert all(not isinstance(value, list) or len(value) <= 1 for value in result.values())  # counts, not rows
    from airflow.providers.common.compat.sdk import Asset

    assert result["asset"] == Asset(f"sqlite://{warehouse}/clicks").uri


def test_the_service_clock_decides_a_day_loaded_before_it_is_over_is_reloaded(emu, warehouse):
    """The emulator's clock (its Date header) is a day behind the data: what is complete is its call."""
    link = emu.store.add_link(url="https://example.com/late", alias="late")
    day = dt.datetime(2026, 10, 6, tzinfo=dt.timezone.utc)
    emu.clock.set(day + dt.timedelta(hours=12))  # running from noon on the 6th, by the service
    emu.record_clicks(link["id"], at=day + dt.timedelta(hours=1))
    first = run(link_load(interval=(day, day + dt.timedelta(days=1))))
    assert first["days"] == ["2026-10-06"] and first["rows"] == 1
    with sqlite3.connect(warehouse) as db:
        assert db.execute("SELECT day, complete FROM clicks_days").fetchall() == [("2026-10-06", 0)]
    emu.clock.set(day + dt.timedelta(days=1, minutes=30))
    emu.record_clicks(link["id"], at=day + dt.timedelta(hours=18))  # later the same day
    emu.record_clicks(link["id"], at=day + dt.timedelta(days=1, minutes=10))  # and on the 7th
    second = run(link_load(interval=(day + dt.timedelta(days=1), day + dt.timedelta(days=2))))
    assert second["days"] == ["2026-10-06", "2026-10-07"]  # the incomplete 6th again, with the 7th
    assert rows(warehouse) == {(link["id"], "2026-10-06", "UTC", 2), (link["id"], "2026-10-07", "UTC", 1)}
    with sqlite3.connect(warehouse) as db:
        assert dict(db.execute("SELECT day, complete FROM clicks_days").fetchall()) == {
            "2026-10-06": 1,
            "2026-10-07": 0,
        }
    # A day that has not begun by the service's clock is refused, though the worker's has passed it.
    with fails_without_retry(LinkstatsInputError, match="future"):
        run(link_load(interval=(day + dt.timedelta(days=2), day + dt.timedelta(days=3))))
    emu.clock.reset()


def test_website_breakdown_progress_lines_and_lineage(emu, warehouse, monkeypatch):
    """A website breakdown per day; a long load's progress and time left; OpenLineage's output is the table."""
    from airflow_provider_linkstats.operators import warehouse as module

    site = visits_near_midnight(emu, "UTC")
    operator = module.LinkstatsWebsiteStatsToWarehouseOperator(
        task_id="pages",
        sql_conn_id="wh",
        table="pages",
        breakdown="page",
        data_interval_start=RUNS[1][0].isoformat(),
        data_interval_end=RUNS[1][1].isoformat(),
    )
    result = run(operator)
    with sqlite3.connect(warehouse) as db:
        loaded = db.execute("SELECT website_id, day, zone, statistic, value, count FROM pages").fetchall()
    day = RUNS[1][0].date().isoformat()
    assert result["requests"] == result["minimum_requests"] == 2  # the listing page, one day of one website
    assert loaded == [(int(site["id"]), day, "UTC", "page", "/p", 3)]  # one visitor, 3 moments of the day

    lines: list[str] = []

    class Log:
        def info(self, message, *args):
            lines.append(message % args)

    from airflow_provider_linkstats.drivers.warehouse import progress as driver

    monkeypatch.setattr(driver, "PROGRESS_EVERY", 0.0)
    progress = driver.Progress(Log(), 40, "links fetched")
    progress.step(10)
    assert lines and lines[0].startswith("10 of 40 links fetched (") and " s left)" in lines[0]

    clicks_near_midnight(emu, "UTC")
    load = link_load(interval=RUNS[3])
    run(load)
    (output,) = load.get_openlineage_facets_on_complete(None).outputs
    assert (output.namespace, output.name) == (f"sqlite://{warehouse}", "clicks")


def test_parquet_without_pyarrow_is_refused_before_any_request(emu, tmp_path):
    try:
        import pyarrow  # noqa: F401

        pytest.skip("pyarrow is installed here: parquet is written")
    except ImportError:
        pass
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator

    emu.stats.reset()
    operator = LinkstatsLinkStatsToWarehouseOperator(
        task_id="parquet",
        path=str(tmp_path / "clicks"),
        file_format="parquet",
        data_interval_start=RUNS[0][0].isoformat(),
        data_interval_end=RUNS[0][1].isoformat(),
    )
    with fails_without_retry(LinkstatsInputError, match="pyarrow"):
        run(operator)
    assert emu.stats.count() == 0


def test_given_link_ids_load_only_those_links(emu, warehouse):
    made = clicks_near_midnight(emu, "UTC")
    chosen = [made[0]["id"], made[2]]  # an id and a record (a create task's output)
    emu.stats.reset()
    result = run(link_load(interval=RUNS[3], link_ids=chosen))
    assert result["links"] == result["fetched"] == 2
    assert emu.stats.count(path_prefix="/links") == 0  # no listing: the ids are given
    assert {row[0] for row in rows(warehouse)} == {made[0]["id"], made[2]["id"]}


def test_a_one_day_load_says_1_day(emu, warehouse, caplog, capsys):
    """Issue 37: 'loaded 5 rows for 1 days into ...'."""
    import logging

    caplog.set_level(logging.INFO)
    clicks_near_midnight(emu, "UTC")
    result = run(link_load(interval=RUNS[2]))
    text = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out
    assert len(result["days"]) == 1 and " for 1 day into " in text and " days into " not in text, text[-2000:]
