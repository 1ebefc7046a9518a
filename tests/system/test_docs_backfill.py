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
    try:  # Airflow 3: the scheduler's (serialized) DAG iterates the runs
        from airflow.serialization.serialized_objects import DagSerialization
    except ImportError:  # 2.11: the DAG itself
        return namespace["clicks_dag"]
    return DagSerialization.deserialize_dag(DagSerialization.serialize_dag(namespace["clicks_dag"]))


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
    dates = [info.logical_date.in_timezone(zone).date() for info in dag.iter_dagrun_infos_between(start, end)]
    assert dates == [dt.date(2026, 3, 1) + dt.timedelta(days=n) for n in range(31)]
