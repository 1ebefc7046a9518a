"""Airflow's task retries are spent only where they can help (real runs with dag.test()).

Every DAG here gives its task retries=2. A permanent error (bad input, 401, 403, 404, 422, a create
whose outcome is unknown) must fail the task on its first try; a transient one (a 503 that the
client's own retries did not outlast) must be tried again by Airflow.

On Airflow 3.3+ the provider's retry policy decides (``LinkstatsRetryPolicy``): the decision and
its reason are Airflow's own ("Retry policy decision" in the try's log; ``retry_reason`` and
``retry_delay_override`` stored with a retried try), and a 429 or 503 is retried after the
service's ``Retry-After``. Before 3.3 the operators raise ``AirflowFailException`` themselves, and
these tests assert that instead (a version check, never a skip of the whole case).
"""

from __future__ import annotations

import importlib.util

import pytest
from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

from tests.conftest import DAGS_FOLDER, connection_json


def load_dags():
    path = DAGS_FOLDER / "tests" / "linkstats_fail_fast.py"
    spec = importlib.util.spec_from_file_location("linkstats_test_dag_fail_fast", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DAGS


def only_task(run):
    (ti,) = run.get_task_instances()
    return ti


def earlier_tries(run) -> list[dict]:
    """Airflow 3.3+: each earlier try of the run's task as stored in task_instance_history."""
    from airflow.models.taskinstancehistory import TaskInstanceHistory
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(
            select(TaskInstanceHistory)
            .where(TaskInstanceHistory.dag_id == run.dag_id, TaskInstanceHistory.run_id == run.run_id)
            .order_by(TaskInstanceHistory.try_number)
        ).all()
        return [
            {
                "try": row.try_number,
                "state": row.state,
                "delay": row.retry_delay_override,
                "reason": row.retry_reason,
                "start": row.start_date,
                "end": row.end_date,
            }
            for row in rows
        ]


def arrange(case: str, emu, monkeypatch) -> None:
    emu.store.add_link(url="https://example.com/spring", alias="spring")
    if case == "401":
        wrong = connection_json(emu.url).replace('"password": "', '"password": "wrong-')
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_WRONG_KEY", wrong)
    elif case == "403":
        emu.faults.fail_next(
            1,
            403,
            body='{"message": "You don\'t have access to this feature.", "status": 403}',
            content_type="application/json",
        )
    elif case == "422":  # the alias lookup finds no twin ("spring2"), then the service rejects the create
        emu.faults.fail_next(
            1,
            422,
            method="POST",
            content_type="application/json",
            body='{"message": {"alias": ["The Alias has already been taken."]}, "status": 422}',
        )
    elif case == "outcome_unknown":
        # The create's answer is lost and the look-up for the link it may have made fails too: nobody
        # can tell whether the link exists, so a resend could make a twin.
        emu.faults.drop_next(1, method="POST")
        emu.faults.drop_next(50, method="GET", path_prefix="/links")


PERMANENT = {
    "input": "LinkstatsInputError",
    "401": "LinkstatsAuthError",
    "403": "LinkstatsAuthError",
    "404": "LinkstatsNotFoundError",
    "422": "LinkstatsValidationError",
    "outcome_unknown": "LinkstatsOutcomeUnknownError",
}
# What the provider's retry policy says of each (Airflow 3.3+), as the try's log shows it.
DECISION = {
    "input": "LinkstatsInputError: bad input, refused before any request",
    "401": "HTTP 401 (LinkstatsAuthError): the API key was refused or lacks permission",
    "403": "HTTP 403 (LinkstatsAuthError): the API key was refused or lacks permission",
    "404": "HTTP 404 (LinkstatsNotFoundError): the service has no such record",
    "422": "HTTP 422 (LinkstatsValidationError): the service rejected the input",
    "outcome_unknown": (
        "LinkstatsOutcomeUnknownError: a create's answer was lost and sending it again could make a twin"
    ),
}


@pytest.mark.parametrize("case", list(PERMANENT))
def test_permanent_error_fails_the_task_on_its_first_try(case, emu, airflow_db, monkeypatch, caplog, capsys):
    arrange(case, emu, monkeypatch)
    dag = load_dags()[case]
    assert dag.default_args["retries"] == 2
    run = dag.test()
    ti = only_task(run)
    assert run.state == "failed" and ti.state == "failed"
    assert ti.try_number == 1, f"{case}: Airflow tried {ti.try_number} times"
    logged = caplog.text + capsys.readouterr().out
    if AIRFLOW_V_3_3_PLUS:  # the provider's retry policy decided, and the try's log says why
        assert "Retry policy decision" in logged and "action=fail" in logged
        assert f"{DECISION[case]}; a retry would meet the same answer, so the task fails now" in logged
        assert "AirflowFailException" not in logged
        assert earlier_tries(run) == []  # no retry was spent
    else:  # before retry policies: the operator fails the task itself
        assert f"AirflowFailException: {PERMANENT[case]}" in logged


def test_transient_error_is_retried_by_airflow(emu, airflow_db, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_NO_CLIENT_RETRY", connection_json(emu.url, max_retries=0))
    emu.store.add_link(url="https://example.com/spring", alias="spring")
    emu.faults.fail_next(1, 503)  # the client makes one attempt: the first try fails, the second finds the link
    run = load_dags()["transient_503"].test()
    ti = only_task(run)
    assert run.state == "success" and ti.state == "success"
    assert ti.try_number == 2
    if AIRFLOW_V_3_3_PLUS:  # no Retry-After: the task's own retry_delay, and the reason kept with the try
        (first,) = earlier_tries(run)
        assert first["delay"] is None
        assert first["reason"] == (
            "HTTP 503 (LinkstatsServerError): the service or the network was briefly unavailable; "
            "retrying after the task's retry_delay"
        )


@pytest.mark.parametrize("status", [429, 503])
def test_throttled_task_is_retried_after_the_services_retry_after(status, emu, airflow_db, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_NO_CLIENT_RETRY", connection_json(emu.url, max_retries=0))
    emu.store.add_link(url="https://example.com/spring", alias="spring")
    emu.faults.fail_next(1, status, retry_after=3)  # the task's retry_delay is 0
    run = load_dags()[f"retry_after_{status}"].test()
    ti = only_task(run)
    assert run.state == "success" and ti.try_number == 2
    if not AIRFLOW_V_3_3_PLUS:  # before retry policies: the task's retry_delay (0 here)
        return
    (first,) = earlier_tries(run)
    assert first["delay"] == 3.0
    kind = "LinkstatsRateLimitError" if status == 429 else "LinkstatsServerError"
    assert first["reason"] == f"HTTP {status} ({kind}): the service asked to wait 3 s (Retry-After); retrying then"
    waited = (ti.start_date - first["end"]).total_seconds()
    assert waited >= 3.0, f"the second try started {waited:.1f} s after the first ended"


def test_a_retry_policy_the_dag_gives_wins(emu, airflow_db, monkeypatch, caplog, capsys):
    arrange("403", emu, monkeypatch)  # one 403, then the link is read
    if not AIRFLOW_V_3_3_PLUS:  # no retry_policy= before 3.3: the operator's own fail-fast decides
        run = load_dags()["403"].test()
        assert run.state == "failed" and only_task(run).try_number == 1
        return
    dag = load_dags()["user_policy"]
    run = dag.test()
    ti = only_task(run)
    assert type(dag.tasks[0].retry_policy).__name__ == "ExceptionRetryPolicy"
    assert run.state == "success" and ti.try_number == 2  # the provider's policy would have failed it
    (first,) = earlier_tries(run)
    assert first["reason"] == "mine"
