"""The warehouse example DAGs in real Airflow (dag.test()): a 3-day backfill of the daily load equals
the emulator's clicks per account day, and the DAG scheduled on the table reads it."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import airflow
import pytest

from tests.integration.test_warehouse import (
    FIRST_DAY,
    clicks_near_midnight,
    counted_in,
    emu_gen,  # noqa: F401, F811 - the fixture
    truth,
)
from tests.integration.test_warehouse_postgres import pg  # noqa: F401 - the fixture
from tests.support.example_dags import load_alone

AIRFLOW_3 = not airflow.__version__.startswith("2.")


def run_for(dag, day: dt.date):
    moment = dt.datetime.combine(day, dt.time(), dt.timezone.utc)
    return dag.test(logical_date=moment) if AIRFLOW_3 else dag.test(execution_date=moment)


class Warehouse:
    """The example DAG's ``linkstats_warehouse`` connection: a SQLite file, or the private PostgreSQL."""

    def __init__(self, backend: str, request, tmp_path, monkeypatch) -> None:
        self.backend = backend
        if backend == "sqlite":
            self.path = tmp_path / "warehouse.db"
            conn = {"conn_type": "sqlite", "host": str(self.path)}
        else:
            port = request.getfixturevalue("pg").get_connection("pgwh").port
            conn = {"conn_type": "postgres", "host": "127.0.0.1", "port": port, "login": "airflow", "schema": "airflow"}
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_WAREHOUSE", json.dumps(conn))

    def records(self, sql: str) -> list[tuple]:
        if self.backend == "sqlite":
            with sqlite3.connect(self.path) as db:
                return db.execute(sql).fetchall()
        from airflow.providers.postgres.hooks.postgres import PostgresHook

        found = PostgresHook(postgres_conn_id="linkstats_warehouse").get_records(sql)
        return [tuple(v.isoformat() if isinstance(v, dt.date) else v for v in row) for row in found]


def complete_days_equal_the_truth(warehouse: Warehouse, emu, zone: str) -> set[str]:
    """After a run: every day marked complete holds the recorded clicks of that day, link by link."""
    table = "linkstats_link_clicks_daily"
    complete = {str(r[0]) for r in warehouse.records(f"SELECT day FROM {table}_days WHERE complete = 1")}
    loaded = {tuple(r) for r in warehouse.records(f"SELECT link_id, day, zone, clicks FROM {table}")}
    assert {r for r in loaded if r[1] in complete} == {r for r in truth(emu, zone) if r[1] in complete}
    return complete


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.xdist_group("postgres"))])
def test_a_backfill_of_the_example_dag_then_the_dag_scheduled_on_its_table(
    emu_gen,  # noqa: F811 - the fixture
    airflow_db,
    tmp_path,
    monkeypatch,
    request,
    backend,
):
    emu = emu_gen
    if not AIRFLOW_3 and emu.links_version != "44":
        pytest.skip(
            "Airflow 2.11's dag.test() cannot run a logical date twice in one metadata database "
            "(it needs the FAB tables): [44] ran these dates"
        )
    warehouse = Warehouse(backend, request, tmp_path, monkeypatch)
    clicks_near_midnight(emu, "Asia/Kolkata")
    zone = counted_in(emu, "Asia/Kolkata")  # UTC on phpShort 44-45, UTC+05:30 on 46+
    module = load_alone("linkstats_stats_to_warehouse", monkeypatch, tmp_path)
    for task in module.dag.tasks:
        task.retries = 0  # a failure shows at once (the DAG's retries wait 5 minutes)
    assert module.CLICKS_ASSET in module.dag.get_task("link_clicks").outlets
    if airflow.__version__.startswith("3.0."):
        # 3.0's dag.test() refuses an outlet asset no DAG processor has registered (inactive) yet
        module.dag.get_task("link_clicks").outlets = []
    from airflow_provider_linkstats.client.warehouse import days_ending_in

    loaded_days: set[dt.date] = set()
    for day in [FIRST_DAY + dt.timedelta(days=i) for i in range(3)]:
        run = run_for(module.dag, day + dt.timedelta(days=1))
        assert run.state == "success", day
        # Airflow 3 gives a manual run (dag.test) an empty interval at its logical date, 2.11 the day from it
        loaded_days |= set(days_ending_in(run.data_interval_start, run.data_interval_end, zone))
        assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
            "link_clicks": "success",
            "website_traffic": "success",
        }
        assert complete_days_equal_the_truth(warehouse, emu, zone)  # after every run
    loaded = set(warehouse.records("SELECT link_id, day, zone, clicks FROM linkstats_link_clicks_daily"))
    assert warehouse.records("SELECT COUNT(*) FROM linkstats_website_traffic_daily") == [(0,)]
    assert len(loaded_days) == 3
    assert loaded == {row for row in truth(emu, zone) if dt.date.fromisoformat(row[1]) in loaded_days}
    # The same run again (a cleared task) leaves the same rows. (Airflow 2.11's dag.test() cannot run a
    # logical date twice without the FAB tables; tests/integration/test_warehouse.py re-runs there.)
    if AIRFLOW_3:
        assert run_for(module.dag, FIRST_DAY + dt.timedelta(days=2)).state == "success"
        again = set(warehouse.records("SELECT link_id, day, zone, clicks FROM linkstats_link_clicks_daily"))
        assert again == loaded
        assert complete_days_equal_the_truth(warehouse, emu, zone)

    # The DAG scheduled on the table (run here by hand: dag.test() emits no asset events).
    run = module.top_links_dag.test()
    assert run.state == "success"
    (top,) = run.get_task_instances()
    assert top.state == "success"


# -- a 30-day backfill across a DST change, through the example DAG --------------------------------------

# (account zone, the DST change): west of UTC falling back, east of UTC springing forward.
BACKFILLS = {
    "new-york-fall-back": ("America/New_York", dt.datetime(2026, 11, 1, 6, tzinfo=dt.timezone.utc)),
    "sydney-spring-forward": ("Australia/Sydney", dt.datetime(2026, 10, 3, 16, tzinfo=dt.timezone.utc)),
}
CLICKED = 3  # links clicked every hour, among 178 never clicked (what a cleanup deletes)


def cleanup_beside(emu, links: list[int], stop):
    """A cleanup deleting never-clicked links one by one while the backfill runs."""
    import threading

    def delete() -> None:
        for link_id in links:
            if stop.wait(0.05):
                return
            emu.store.delete("links", link_id)

    worker = threading.Thread(target=delete, daemon=True)
    worker.start()
    return worker


@pytest.mark.slow
@pytest.mark.parametrize("cleanup", [False, True], ids=["alone", "with-a-cleanup"])
@pytest.mark.parametrize("backfill", sorted(BACKFILLS))
def test_a_30_day_backfill_across_a_dst_change_equals_the_account_days(
    emulators, airflow_db, tmp_path, monkeypatch, backfill, cleanup
):
    """30 runs of the example DAG (scheduled at the account's midnights, data intervals), asked a
    week after the last day: every day marked complete equals the recorded clicks of the account's
    day (23 or 25 hours on the DST night), and each run makes the listing's pages + one request per
    clicked link + one more per clicked link on a day whose offset is not the service's today.

    With a cleanup: links never clicked are deleted while the backfill runs, and (where the emulator
    has ``faults.after_page``) in the run of the DST night a link of the listing's first page is
    deleted right after that page is read, which moves a clicked link from the second page's top
    to the first page's bottom: a walk by offset never sees it. A run may then read a page more."""
    import threading
    from zoneinfo import ZoneInfo

    from airflow_provider_linkstats.client.warehouse import ServiceDay, listing_pages
    from tests.conftest import GENERATIONS, connection_json

    zone, change = BACKFILLS[backfill]
    tz = ZoneInfo(zone)
    emu = emulators("49")
    emu.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emu.analytics_url, "linkstats_analytics", api_version=GENERATIONS["49"]),
    )
    warehouse = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_WAREHOUSE", json.dumps({"conn_type": "sqlite", "host": str(warehouse)}))
    monkeypatch.setenv("LINKSTATS_ACCOUNT_ZONE", zone)
    emu.configure_account(timezone=zone)
    first_day = change.astimezone(tz).date() - dt.timedelta(days=15)
    days = [first_day + dt.timedelta(days=n) for n in range(30)]
    begin = dt.datetime.combine(first_day, dt.time(), tz)
    emu.clock.set(begin - dt.timedelta(days=1), freeze=True)
    # Newest first, the listing's first page holds the two newest clicked links and 98 never
    # clicked; the second page begins with the oldest clicked link, then 80 never clicked.
    older = emu.store.seed_links(80, alias_prefix="old-", url="https://example.com/old")
    clicked = [emu.store.add_link(url="https://example.com/0", alias="dst-0")["id"]]
    newer = emu.store.seed_links(98, alias_prefix="new-", url="https://example.com/new")
    clicked += [emu.store.add_link(url=f"https://example.com/{n}", alias=f"dst-{n}")["id"] for n in (1, 2)]
    links = 80 + 98 + CLICKED
    hours = int((dt.datetime.combine(days[-1] + dt.timedelta(days=1), dt.time(), tz) - begin).total_seconds() // 3600)
    for link_id in clicked:
        for hour in range(hours):
            at = begin + dt.timedelta(hours=hour, minutes=20)
            emu.record_clicks(link_id, at=at, count=1 + hour % 2, country=("US", "AU")[hour % 2])
    asked = dt.datetime.combine(days[-1] + dt.timedelta(days=7), dt.time(12), tz)
    emu.clock.set(asked)  # the backfill runs a week after its last day
    offset_now = asked.utcoffset()

    module = load_alone("linkstats_stats_to_warehouse", monkeypatch, tmp_path)
    for task in module.dag.tasks:
        task.retries = 0
    if airflow.__version__.startswith("3.0."):
        module.dag.get_task("link_clicks").outlets = []
    stop = threading.Event()
    worker = cleanup_beside(emu, list(range(older["first_id"], older["last_id"] + 1)), stop) if cleanup else None
    targeted = cleanup and hasattr(emu.faults, "after_page")
    per_run = []
    try:
        for day in days:
            emu.stats.reset()
            if targeted and ServiceDay.of(day, zone).end - ServiceDay.of(day, zone).start != dt.timedelta(days=1):
                emu.faults.after_page(page=1, delete=[newer["last_id"]])  # the DST night's run
            # A manual run (dag.test) gets the interval that ended last: the run at D+1's midnight loads D.
            run = run_for_moment(module.dag, dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tz))
            assert run.state == "success", day
            served = emu.stats.count(path_prefix="/links") + emu.stats.count(path_prefix="/stats")
            per_run.append((day, served))
            assert table_equals_the_account_days(warehouse, emu, zone) == {d.isoformat() for d in days if d <= day}
    finally:
        stop.set()
        if worker:
            worker.join(10)
    emu.clock.reset()

    assert sorted(table_equals_the_account_days(warehouse, emu, zone)) == [day.isoformat() for day in days]
    spans = [ServiceDay.of(day, zone) for day in days]
    assert sorted({int((s.end - s.start).total_seconds() // 3600) for s in spans}) in ([23, 24], [24, 25])

    # The cost of each run, and its bound: the listing's pages, one request per clicked link, one
    # more per clicked link on a day labelled with another offset; with a cleanup, a page more for
    # the listing changing under the walk. The first run writes into a new table, so it fetches every
    # link listed (a counter of 0 may be a reset); with a cleanup, a link it deletes between that
    # listing and its statistics costs one read more (its 404 confirmed), at most one per older link.
    for (day, served), span in zip(per_run, spans, strict=True):
        relabelled = not (span.start.astimezone(tz).utcoffset() == offset_now == span.end.astimezone(tz).utcoffset())
        first_run = day == days[0]
        bound = listing_pages(links) + CLICKED * (1 + relabelled) + (links - CLICKED if first_run else 0)
        if cleanup:
            slack = 1 + (older["last_id"] - older["first_id"] + 1 if first_run else 0)
            assert served <= bound + slack, (day, served, bound + slack)
        else:
            assert served == bound, (day, served, bound)


def table_equals_the_account_days(warehouse, emu, zone: str) -> set[str]:
    """The days marked complete (each in ``zone``), each holding the recorded clicks of the account's
    day link by link, and no rows of days not complete."""
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(zone)
    truth: dict = {}
    for click in emu.store.recorded_clicks():
        key = (int(click["link_id"]), dt.datetime.fromisoformat(click["at"]).astimezone(tz).date().isoformat())
        truth[key] = truth.get(key, 0) + int(click.get("count", 1))
    with sqlite3.connect(warehouse) as db:
        complete = dict(db.execute("SELECT day, zone FROM linkstats_link_clicks_daily_days WHERE complete = 1"))
        rows = db.execute("SELECT link_id, day, clicks FROM linkstats_link_clicks_daily").fetchall()
    loaded = {(link, day): n for link, day, n in rows}
    assert set(complete.values()) <= {zone}
    assert loaded == {key: n for key, n in truth.items() if key[1] in complete}
    return set(complete)


def run_for_moment(dag, moment: dt.datetime):
    return dag.test(logical_date=moment) if AIRFLOW_3 else dag.test(execution_date=moment)
