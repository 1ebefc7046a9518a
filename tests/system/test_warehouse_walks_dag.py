"""The example warehouse DAG in real Airflow (dag.test()) while the account moves under it (issue 36,
items 1-3): links deleted during its listing and before their statistics, then a run whose listing
runs over the service's midnight. After every run, every day marked complete equals the emulator's
recorded clicks of that day; the day the late run loaded is kept incomplete and the next run makes
it equal the truth."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import airflow

from tests.integration.test_warehouse import emu_gen, truth  # noqa: F401 - the fixture
from tests.support.example_dags import load_alone

AIRFLOW_3 = not airflow.__version__.startswith("2.")
DAY = dt.datetime(2026, 10, 6, tzinfo=dt.timezone.utc)
TABLE = "linkstats_link_clicks_daily"


def load_day(dag, day: dt.datetime):
    """A run that loads ``day`` (UTC): a manual run (dag.test) gets the interval that ended last
    before its logical date, on Airflow 3 and 2.11 alike (``infer_manual_data_interval``)."""
    moment = day + dt.timedelta(days=1)
    run = dag.test(logical_date=moment) if AIRFLOW_3 else dag.test(execution_date=moment)
    assert run.state == "success"
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
        "link_clicks": "success",
        "website_traffic": "success",
    }


def complete_days_equal_the_truth(emu, warehouse) -> dict[str, int]:
    with sqlite3.connect(warehouse) as db:
        flags = dict(db.execute(f"SELECT day, complete FROM {TABLE}_days").fetchall())
        loaded = set(db.execute(f"SELECT link_id, day, zone, clicks FROM {TABLE}").fetchall())
    complete = {day for day, done in flags.items() if done}
    assert {row for row in loaded if row[1] in complete} == {row for row in truth(emu, "UTC") if row[1] in complete}
    return flags


def test_the_example_dag_while_links_are_deleted_and_its_listing_runs_over_midnight(
    emu_gen, airflow_db, tmp_path, monkeypatch  # noqa: F811
):
    emu = emu_gen
    warehouse = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_WAREHOUSE", json.dumps({"conn_type": "sqlite", "host": str(warehouse)}))
    emu.configure_account(timezone="UTC")
    monkeypatch.setenv("LINKSTATS_ACCOUNT_ZONE", "UTC")  # the DAG's midnights are the account's
    module = load_alone("linkstats_stats_to_warehouse", monkeypatch, tmp_path)
    for task in module.dag.tasks:
        task.retries = 0
    if airflow.__version__.startswith("3.0."):
        module.dag.get_task("link_clicks").outlets = []

    emu.clock.set(DAY - dt.timedelta(hours=12), freeze=True)
    made = emu.store.seed_links(150, alias_prefix="dag-", url="https://example.com/dag")
    ids = list(range(made["first_id"], made["last_id"] + 1))
    during, before_stats, late = ids[119], ids[30], ids[-1]  # `during` and `late` on page 1 newest first
    noon = (DAY + dt.timedelta(hours=12)).isoformat()
    emu.store.record_traffic([{"link_id": i, "at": noon} for i in ids if i not in (during, late)])

    # Day 1: one link deleted once the listing's page 1 is read, one after the listing (before its statistics).
    emu.clock.set(DAY + dt.timedelta(days=1, hours=1))
    emu.faults.after_page(page=1, delete=[during], sort="desc")
    emu.faults.after_page(page=1, delete=[before_stats], sort="asc")
    load_day(module.dag, DAY)
    assert complete_days_equal_the_truth(emu, warehouse) == {"2026-10-06": 1}
    assert emu.faults.describe()["after_page"] == []

    # Day 2: the run starts at 23:59:30 by the service's clock, its listing ends after midnight, and the
    # newest link (read on page 1 with 0 clicks) is clicked 4 times at 23:59:45.
    emu.clock.set(DAY + dt.timedelta(days=1, hours=23, minutes=59, seconds=30))
    emu.faults.after_page(page=1, advance=60, sort="desc")
    load_day(module.dag, DAY + dt.timedelta(days=1))
    assert complete_days_equal_the_truth(emu, warehouse) == {"2026-10-06": 1, "2026-10-07": 0}
    at = (DAY + dt.timedelta(days=1, hours=23, minutes=59, seconds=45)).isoformat()
    emu.store.record_traffic([{"link_id": late, "at": at, "count": 4}])

    # Day 3: the incomplete day is reloaded with it; every day complete and equal to the truth.
    emu.clock.set(DAY + dt.timedelta(days=3, hours=1))
    load_day(module.dag, DAY + dt.timedelta(days=2))
    flags = complete_days_equal_the_truth(emu, warehouse)
    assert flags == {"2026-10-06": 1, "2026-10-07": 1, "2026-10-08": 1}
    assert (late, "2026-10-07", "UTC", 4) in truth(emu, "UTC")
    emu.clock.reset()
