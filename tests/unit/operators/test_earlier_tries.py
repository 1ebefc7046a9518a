"""The moment before which no try of a task sent anything (operators.base.earlier_tries_since, issue 37
items 2 and 4): what made_by and a lost worker's retry judge a record's created_at by. It must not move
when the task or its whole run is cleared (a clear moves the run's start_date and queued_at)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from airflow_provider_linkstats.operators.base import earlier_tries_since

UTC = dt.timezone.utc
DUE = dt.datetime(2026, 11, 28, 7, 0, tzinfo=UTC)
CLEARED = DUE + dt.timedelta(minutes=5)  # the start_date a clear gave the run


def context(try_number, **run):
    return {"ti": SimpleNamespace(try_number=try_number), "dag_run": SimpleNamespace(**run)}


def test_the_first_try_has_no_earlier_try():
    assert earlier_tries_since(context(1, run_after=DUE, start_date=DUE)) == (None, True)


def test_a_retry_or_a_clear_judges_by_run_after_not_the_moved_start_date():
    for try_number in (2, 3):  # a plain retry; a clear of the task or of the whole run (try_number goes on)
        assert earlier_tries_since(context(try_number, run_after=DUE, start_date=CLEARED)) == (DUE, True)


def test_airflow_2_a_manual_run_by_its_logical_date_a_scheduled_one_by_its_interval_end():
    manual = context(2, run_type="manual", logical_date=DUE, data_interval_end=DUE - dt.timedelta(days=1),
                     start_date=CLEARED)  # fmt: skip
    assert earlier_tries_since(manual) == (DUE, True)
    scheduled = context(2, run_type="scheduled", logical_date=DUE - dt.timedelta(days=1), data_interval_end=DUE,
                        start_date=CLEARED)  # fmt: skip
    assert earlier_tries_since(scheduled) == (DUE, True)


def test_outside_a_run_nobody_is_known_to_be_this_tasks():
    assert earlier_tries_since({"ti": SimpleNamespace(try_number=2)}) == (None, False)
    assert earlier_tries_since({}) == (None, False)


def test_on_the_real_airflow_context_run_after_is_read():
    """The worker's DagRun model carries run_after (Airflow 3) or logical_date (2.11)."""
    import airflow

    if airflow.__version__.startswith("2."):
        from airflow.models.dagrun import DagRun

        assert hasattr(DagRun, "logical_date") or hasattr(DagRun, "execution_date")
    else:
        from airflow.sdk.api.datamodels._generated import DagRun

        assert "run_after" in DagRun.model_fields and "clear_number" in DagRun.model_fields
