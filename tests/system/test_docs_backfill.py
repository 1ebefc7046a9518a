"""docs/warehouse.md's backfill commands, read by the installed Airflow's own CLI parser, give the
logical dates of the account's month to the page's DAG: the dates are parsed as Airflow parses
them (a date alone is midnight UTC) and the runs are the DAG's timetable's between them."""

from __future__ import annotations

import shlex

from tests.support.docs_pages import REPO, blocks


def _page_blocks():
    return blocks((REPO / "docs" / "warehouse.md").read_text())


def _dag():
    code = next(b.code for b in _page_blocks() if b.language == "python" and 'dag_id="clicks_to_warehouse"' in b.code)
    namespace: dict = {}
    exec(compile(code, "docs/warehouse.md", "exec"), namespace)
    return namespace["dag"]


def _logical_dates(timetable, start, end) -> list:
    """The logical dates a backfill from ``start`` to ``end`` creates, as the scheduler asks the DAG's
    timetable for them one after the other (the same calls on 2.11 and every 3.x)."""
    from airflow.timetables.base import TimeRestriction

    restriction = TimeRestriction(earliest=start, latest=end, catchup=True)
    dates, last = [], None
    while (info := timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)) is not None:
        dates.append(info.logical_date)
        last = info.data_interval
    return dates


def _commands() -> list[list[str]]:
    code = next(b.code for b in _page_blocks() if b.language == "bash" and "backfill" in b.code)
    commands, pending = [], ""
    for line in code.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            commands.append(shlex.split(pending))
            pending = ""
    return commands


def test_the_backfill_command_loads_the_accounts_march_each_day_once():
    """Before: ``--from-date 2026-03-01 --to-date 2026-03-31`` gave a New York DAG the logical dates
    March 1 to March 30 (30 runs: March 31 never loaded); now March 1 to 31, 31 runs."""
    import datetime as dt

    from airflow import __version__
    from airflow.cli import cli_parser

    airflow3 = int(__version__.split(".")[0]) >= 3
    wanted = ["backfill", "create"] if airflow3 else ["dags", "backfill"]
    command = next(c for c in _commands() if c[1:3] == wanted)
    args = cli_parser.get_parser().parse_args(command[1:])
    start, end = (args.from_date, args.to_date) if airflow3 else (args.start_date, args.end_date)
    if not airflow3:
        assert args.reset_dagruns and args.yes
    dag = _dag()
    zone = dag.timetable._timezone
    dates = [moment.in_timezone(zone).date() for moment in _logical_dates(dag.timetable, start, end)]
    assert dates == [dt.date(2026, 3, 1) + dt.timedelta(days=n) for n in range(31)]


def test_the_pages_dag_triggered_by_hand_loads_the_day_that_ended_last(emu, airflow_db, tmp_path, monkeypatch):
    """The page's DAG started as a user starts it by hand: on Airflow 3 without a logical date (the
    UI's trigger button), so without a data interval. Before: the task failed ("a run with a data
    interval"); now the run is taken at the moment it was due and loads the day that ended last before
    it, and says so. On 2.11 a manual run always has a logical date, and its interval."""
    import datetime as dt
    import json
    import sqlite3

    from tests.conftest import DAGS_FOLDER
    from tests.system.test_docs_dags import DocDag, load_dag, run_without_logical_date

    warehouse = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_WAREHOUSE", json.dumps({"conn_type": "sqlite", "host": str(warehouse)}))
    link = emu.store.add_link(url="https://example.com/hand", alias="by-hand")
    yesterday = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)
    emu.record_clicks(link["id"], at=yesterday.replace(hour=12, minute=0, second=0, microsecond=0), count=3)
    block = next(b for b in _page_blocks() if b.language == "python" and 'dag_id="clicks_to_warehouse"' in b.code)
    path, dag = load_dag(DocDag("docs/warehouse.md", block.line, block.code), DAGS_FOLDER / "docs")
    try:
        run = run_without_logical_date(dag)
    finally:
        path.unlink()
    assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    with sqlite3.connect(warehouse) as db:
        rows = db.execute("SELECT link_id, day, clicks FROM linkstats_link_clicks_daily").fetchall()
    from airflow import __version__

    if int(__version__.split(".")[0]) >= 3:
        # phpShort 44-45 counts UTC days: yesterday's (UTC) day ended last before the run.
        assert rows == [(link["id"], yesterday.date().isoformat(), 3)]
    else:  # the manual run's interval is the New York day that ended last: its UTC day may be the one before
        assert rows in ([(link["id"], yesterday.date().isoformat(), 3)], [])
