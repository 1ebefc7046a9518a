"""When a task instance's first try began (operators.ownership.first_try_began, issue 44 item 4): what a
record under a user's alias is judged by. Airflow's record of the tries, not the run's run_after or
logical_date (a backfill sets them weeks back), nor the run's start_date once a clear moved it."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from airflow_provider_linkstats.operators.ownership import first_try_began, task_claim

UTC = dt.timezone.utc
DUE = dt.datetime(2026, 10, 28, 7, 0, tzinfo=UTC)  # a backfill's run_after: a month back
STARTED = dt.datetime(2026, 11, 28, 7, 0, tzinfo=UTC)  # when the run began
CLEARED = STARTED + dt.timedelta(minutes=5)  # the start_date a clear of the whole run gave it


def context(try_number, ti_start=None, **run):
    ti = SimpleNamespace(try_number=try_number, start_date=ti_start, dag_id="d", run_id="r", task_id="t", map_index=-1)
    return {"ti": ti, "dag_run": SimpleNamespace(dag_id="d", run_id="r", **run)}


def test_the_first_try_began_with_its_own_start():
    assert first_try_began(context(1, STARTED + dt.timedelta(seconds=9), run_after=DUE, start_date=STARTED)) == (
        STARTED + dt.timedelta(seconds=9), True)  # fmt: skip


def test_a_retry_in_a_run_never_cleared_judges_by_the_runs_start_not_run_after():
    later = STARTED + dt.timedelta(minutes=1)  # this try's own start
    assert first_try_began(context(2, later, run_after=DUE, start_date=STARTED, clear_number=0)) == (STARTED, True)


def test_after_a_clear_on_airflow_3_the_runs_run_after_is_what_is_left():
    assert first_try_began(context(3, CLEARED, run_after=STARTED, start_date=CLEARED, clear_number=1)) == (
        STARTED, True)  # fmt: skip


def test_outside_a_run_nobody_is_known_to_be_this_tasks():
    assert first_try_began({"ti": SimpleNamespace(try_number=2)}) == (None, False)
    assert first_try_began({}) == (None, False)
    assert task_claim({}).key is None and not task_claim({}).known


def test_the_key_is_the_task_instances_and_the_deployments(monkeypatch):
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "production")
    first = task_claim(context(1, STARTED, run_after=DUE, start_date=STARTED)).key
    assert first == task_claim(context(4, CLEARED, run_after=DUE, start_date=CLEARED, clear_number=2)).key
    assert first != task_claim(context(1, STARTED, run_after=DUE, start_date=STARTED), row=1).key
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "staging")
    assert first != task_claim(context(1, STARTED, run_after=DUE, start_date=STARTED)).key


def test_on_the_real_airflow_context_the_runs_clear_number_is_read():
    """The worker's DagRun model carries clear_number and start_date (Airflow 3), and 2.11's task
    instance history is a table of its own."""
    import airflow

    if airflow.__version__.startswith("2."):
        from airflow.models.taskinstancehistory import TaskInstanceHistory

        assert hasattr(TaskInstanceHistory, "start_date")
    else:
        from airflow.sdk.api.datamodels._generated import DagRun

        assert {"run_after", "clear_number", "start_date"} <= set(DagRun.model_fields)
