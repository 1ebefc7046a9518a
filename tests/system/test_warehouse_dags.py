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
from tests.integration.test_warehouse_postgres import pg, postgres  # noqa: F401 - the fixtures
from tests.support.example_dags import load_module

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
    module = load_module("linkstats_stats_to_warehouse")
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
