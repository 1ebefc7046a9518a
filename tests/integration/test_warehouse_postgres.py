"""The warehouse load into a real PostgreSQL (a private cluster the test starts with initdb and
pg_ctl, as ``make e2e`` does): the backfill equals the recorded clicks per service day, and a
re-run, a retry after a kill between two days and two overlapping backfills at once leave the same
rows. Skipped, saying why, only where the PostgreSQL binaries are missing (CI installs them)."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_warehouse import (
    RUNS,
    clicks_near_midnight,
    concurrently,
    counted_in,
    emu_gen,  # noqa: F401 - the fixture
    link_load,
    loaded_days,
    run,
    truth,
    warehouse,  # noqa: F401 - the fixture
)
from tests.integration.test_warehouse_days import DST_NIGHTS

pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture
def pg(postgres, monkeypatch):
    """Connection ``pgwh`` (the postgres provider's hook), the tables dropped before and after."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_PGWH",
        json.dumps(
            {"conn_type": "postgres", "host": "127.0.0.1", "port": postgres, "login": "airflow", "schema": "airflow"}
        ),
    )
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    hook = PostgresHook(postgres_conn_id="pgwh")

    def drop() -> None:
        names = [r[0] for r in hook.get_records("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        for table in names:
            if table.startswith(("clicks", "linkstats_")):
                hook.run(f"DROP TABLE IF EXISTS {table}")

    drop()
    yield hook
    drop()


def rows(hook, table: str = "clicks") -> set[tuple]:
    return {
        (r[0], r[1].isoformat(), r[2], r[3])
        for r in hook.get_records(f"SELECT link_id, day, zone, clicks FROM {table}")
    }


def load(interval):
    return run(link_load(interval=interval, sql_conn_id="pgwh"))


def test_postgres_backfill_reruns_kill_and_overlapping_backfills(emu_gen, pg, monkeypatch):  # noqa: F811
    clicks_near_midnight(emu_gen, "America/New_York")
    zone = counted_in(emu_gen, "America/New_York")
    expected = {row for row in truth(emu_gen, zone) if row[1] in loaded_days(zone)}
    reports = [load(interval) for interval in RUNS]
    assert rows(pg) == expected
    assert all(r["requests"] == r["minimum_requests"] for r in reports)
    assert reports[0]["asset"] == f"postgres://127.0.0.1:{pg.get_connection('pgwh').port}/airflow/public/clicks"
    port = pg.get_connection("pgwh").port
    operator = link_load(interval=RUNS[0], sql_conn_id="pgwh")
    run(operator)
    (output,) = operator.get_openlineage_facets_on_complete(None).outputs
    assert (output.namespace, output.name) == (f"postgres://127.0.0.1:{port}", "airflow.public.clicks")
    for interval in reversed(RUNS):
        load(interval)
    assert rows(pg) == expected
    # the day column is a DATE
    assert pg.get_first(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'clicks' AND column_name = 'day'"
    ) == ("date",)

    from airflow_provider_linkstats.drivers.sinks import SqlSink

    pg.run("DELETE FROM clicks")
    pg.run("DELETE FROM clicks_counters")
    written = SqlSink.write_day

    def killed_after_one(self, day, *args, **kwargs):
        written(self, day, *args, **kwargs)
        raise SystemExit("killed")

    monkeypatch.setattr(SqlSink, "write_day", killed_after_one)
    with pytest.raises(SystemExit):
        load((RUNS[1][0], RUNS[3][1]))
    monkeypatch.setattr(SqlSink, "write_day", written)
    load((RUNS[1][0], RUNS[3][1]))
    for interval in RUNS:
        load(interval)
    assert rows(pg) == expected

    pg.run("DELETE FROM clicks")
    pg.run("DELETE FROM clicks_counters")
    # Two workers: two processes, each a backfill of its own, at the same time.
    workers = [
        concurrently(RUNS[:4], "pgwh"),
        concurrently(RUNS[2:], "pgwh"),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert rows(pg) == expected


def test_postgres_two_selections_loading_one_table_at_once_lose_nothing(emu, pg):
    """Two spaces loaded into one table by two workers at once, 20 times: every row and every
    selection's flags and counters kept (each selection's next run reloads and fetches nothing)."""
    from tests.integration.test_warehouse_state import REPEATS, at_once, interval, two_spaces

    spaces = two_spaces(emu)
    expected = truth(emu, "UTC")
    lost = []
    for repeat in range(REPEATS):
        table = f"clicks_{repeat}"
        makes = [
            lambda s=s, t=table: link_load(t, interval=interval(0, 3), space_id=s, sql_conn_id="pgwh") for s in spaces
        ]
        assert at_once(*makes) == [0, 0]
        found = rows(pg, table)
        lost.append(len(expected - found))
        assert found <= expected
        for space_id in spaces:
            again = run(link_load(table, interval=interval(3), space_id=space_id, sql_conn_id="pgwh"))
            assert again["days"] == ["2026-10-09"] and again["fetched"] == 0, (repeat, space_id, again)
    assert lost == [0] * REPEATS


def test_postgres_tables_of_the_layout_before_selections_are_migrated(emu, pg):
    """The state tables of the layout before selections (PostgreSQL): migrated in place, their
    incomplete day reloaded, their counters used; two loads migrating at once both succeed."""
    from tests.integration.test_warehouse_state import LEGACY_TABLES, at_once, interval, two_spaces

    two_spaces(emu)
    for statement in LEGACY_TABLES:
        pg.run(statement)
    pg.run("INSERT INTO clicks_days VALUES ('clicks', '2026-10-07', 'UTC', 0, '2026-10-07T12:00:00+00:00')")
    pg.run("INSERT INTO clicks_counters VALUES ('clicks', 1, 1, '2026-10-07T12:00:00+00:00')")
    assert at_once(
        lambda: link_load(interval=interval(2), sql_conn_id="pgwh"),
        lambda: link_load(interval=interval(2), space_id=1, sql_conn_id="pgwh"),
    ) == [0, 0]
    # The legacy counter (1 click, steady since 2026-10-07 12:00) is short of what link 1's answer
    # holds, so its selection reloads from the day before (2026-10-06) too: every row is the truth.
    loaded = rows(pg)
    assert loaded >= {row for row in truth(emu, "UTC") if row[1] in ("2026-10-07", "2026-10-08")}
    assert loaded <= truth(emu, "UTC")
    assert pg.get_first("SELECT COUNT(*) FROM clicks_days WHERE selection = ''") == (1,)
    assert pg.get_first("SELECT COUNT(*) FROM clicks_counters WHERE selection = ''") == (1,)


@pytest.mark.parametrize("conn_id", ["wh", "pgwh"])
def test_overlapping_selections_loading_one_table_at_once_lose_nothing(emu, pg, warehouse, conn_id):  # noqa: F811
    """Every link and space one's links (the same rows written by both) into one table at once, 5
    times, on SQLite and PostgreSQL: a transaction that meets the other's rows runs again; nothing lost."""
    from tests.integration.test_warehouse import rows as sqlite_rows
    from tests.integration.test_warehouse_state import at_once, interval, two_spaces

    space_id = next(iter(two_spaces(emu)))
    expected = truth(emu, "UTC")
    for repeat in range(5):
        table = f"clicks_overlap_{repeat}"
        assert at_once(
            lambda t=table: link_load(t, interval=interval(0, 3), sql_conn_id=conn_id),
            lambda t=table: link_load(t, interval=interval(0, 3), space_id=space_id, sql_conn_id=conn_id),
        ) == [0, 0]
        assert (rows(pg, table) if conn_id == "pgwh" else sqlite_rows(warehouse, table)) == expected


@pytest.mark.parametrize("night", sorted(DST_NIGHTS))
def test_postgres_daily_utc_runs_across_a_dst_night_load_every_hour_of_the_account_day_once(
    emulators, pg, monkeypatch, night
):
    """The DST scenario of ``test_warehouse_days`` (phpShort 49, daily UTC runs at their time across
    New York's fall-back night and Sydney's spring-forward night) into PostgreSQL, where ``day`` is
    a DATE and the flags live in the same database: every hour of the account's day in exactly one
    day marked complete, each day the account day's recorded clicks."""
    import datetime as dt

    from tests.conftest import GENERATIONS, connection_json
    from tests.integration.test_warehouse_days import (
        assert_every_hour_once,
        clicks_every_hour,
        daily_utc_runs,
    )
    from tests.integration.test_warehouse_days import load as load_days

    emu = emulators("49")
    emu.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emu.analytics_url, "linkstats_analytics", api_version=GENERATIONS["49"]),
    )
    zone, change = DST_NIGHTS[night]
    try:
        clicks_every_hour(emu, zone, change)
        for start, end in daily_utc_runs(change):
            emu.clock.set(end + dt.timedelta(minutes=10))
            report = load_days("clicks", start, end, sql_conn_id="pgwh")
            assert report["requests"] == report["minimum_requests"]
        emu.clock.reset()
        recorded, loaded = assert_every_hour_once(emu, pg, "clicks", zone)
        assert recorded == loaded > 0
        assert pg.get_first(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'clicks_days' AND column_name = 'day'"
        ) == ("date",)
    finally:
        emu.reset()


@pytest.mark.parametrize("move", ["east-utc-to-tokyo", "west-tokyo-to-utc"])
def test_postgres_a_zone_change_between_runs_puts_every_hour_in_one_day_exactly(
    emulators, pg, monkeypatch, tmp_path, move
):
    """The zone change of ``test_warehouse_review`` into PostgreSQL: the days table's zones are read
    back (``MAX(day)`` per zone, a DATE), the first day in the new zone spans from the old days' end."""
    import datetime as dt

    from tests.integration.test_warehouse_days import clicks_every_hour, daily_utc_runs
    from tests.integration.test_warehouse_days import load as load_days
    from tests.integration.test_warehouse_review import ZONE_MOVES, runs_across_a_zone_change, zone_emulator

    old, new, expected = ZONE_MOVES[move]
    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    change = dt.datetime(2026, 10, 10, 12, tzinfo=dt.timezone.utc)
    clicks_every_hour(emu, old, change, links=1, per_hour=1)
    try:
        runs_across_a_zone_change(
            emu, new, lambda start, end: load_days("clicks", start, end, sql_conn_id="pgwh"), daily_utc_runs(change)
        )
    finally:
        emu.reset()
    loaded = {day.isoformat(): (zone, clicks) for day, zone, clicks in pg.get_records(
        "SELECT day, zone, SUM(clicks) FROM clicks GROUP BY day, zone")}  # fmt: skip
    assert loaded == {day: (old if day < "2026-10-10" else new, n) for day, n in expected.items()}
    assert pg.get_first("SELECT COUNT(*) FROM clicks_days WHERE complete = 0") == (0,)
