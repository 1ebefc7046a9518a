"""One DAG per kind of failure, each task with retries=2: run by tests/system/test_fail_fast.py with dag.test().

A permanent error must fail the task on its first try; a transient one must be retried by Airflow.
"""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator, LinkstatsGetLinkOperator

RETRIES = {"retries": 2, "retry_delay": dt.timedelta(0)}

# case -> (operator class, its arguments); the test arranges the server's side of each case.
CASES = {
    "input": (LinkstatsCreateLinkOperator, {"url": "{{ params.url }}"}),
    "401": (LinkstatsGetLinkOperator, {"link_id": 1, "linkstats_conn_id": "linkstats_wrong_key"}),
    "403": (LinkstatsGetLinkOperator, {"link_id": 1}),
    "404": (LinkstatsGetLinkOperator, {"link_id": 987654}),
    "422": (LinkstatsCreateLinkOperator, {"url": "https://example.com/landing", "alias": "spring2"}),
    "outcome_unknown": (LinkstatsCreateLinkOperator, {"url": "https://example.com/no-alias"}),
    "transient_503": (LinkstatsGetLinkOperator, {"link_id": 1, "linkstats_conn_id": "linkstats_no_client_retry"}),
}

DAGS = {}
for case, (operator, arguments) in CASES.items():
    with DAG(
        f"linkstats_test_fail_fast_{case}",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        params={"url": "ftp://not-http.example.com"},
        default_args=RETRIES,
    ) as dag:
        operator(task_id="call", **arguments)
    DAGS[case] = dag
    globals()[f"dag_{case}"] = dag
