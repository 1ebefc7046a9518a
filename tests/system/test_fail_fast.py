"""Airflow's task retries are spent only where they can help (real runs with dag.test()).

Every DAG here gives its task retries=2. A permanent error (bad input, 401, 403, 404, 422, a create
whose outcome is unknown) must fail the task on its first try; a transient one (a 503 that the
client's own retries did not outlast) must be tried again by Airflow.
"""

from __future__ import annotations

import importlib.util

import pytest

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
        emu.faults.drop_next(1, method="POST")


PERMANENT = {
    "input": "LinkstatsInputError",
    "401": "LinkstatsAuthError",
    "403": "LinkstatsAuthError",
    "404": "LinkstatsNotFoundError",
    "422": "LinkstatsValidationError",
    "outcome_unknown": "LinkstatsOutcomeUnknownError",
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
    assert f"AirflowFailException: {PERMANENT[case]}" in logged


def test_transient_error_is_retried_by_airflow(emu, airflow_db, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_NO_CLIENT_RETRY", connection_json(emu.url, max_retries=0))
    emu.store.add_link(url="https://example.com/spring", alias="spring")
    emu.faults.fail_next(1, 503)  # the client makes one attempt: the first try fails, the second finds the link
    run = load_dags()["transient_503"].test()
    ti = only_task(run)
    assert run.state == "success" and ti.state == "success"
    assert ti.try_number == 2
