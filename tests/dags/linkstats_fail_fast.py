"""One DAG per kind of failure, each task with retries=2: run by tests/system/test_fail_fast.py with dag.test().

A permanent error must fail the task on its first try; a transient one must be retried by Airflow
(on Airflow 3.3+ after the service's Retry-After when it sent one). ``user_policy`` gives the task a
retry policy of its own (Airflow 3.3+ only), which must win over the provider's.
"""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.providers.common.compat.sdk import DAG
from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

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
    "retry_after_429": (LinkstatsGetLinkOperator, {"link_id": 1, "linkstats_conn_id": "linkstats_no_client_retry"}),
    "retry_after_503": (LinkstatsGetLinkOperator, {"link_id": 1, "linkstats_conn_id": "linkstats_no_client_retry"}),
}
if AIRFLOW_V_3_3_PLUS:  # retry_policy= arrived in Airflow 3.3
    from airflow.providers.common.compat.sdk import ExceptionRetryPolicy, RetryAction, RetryRule

    from airflow_provider_linkstats.client.errors import LinkstatsAuthError

    # The DAG author's own rule: a 403 is worth a retry here (say, a plan being upgraded).
    MINE = ExceptionRetryPolicy(
        rules=[RetryRule(exception=LinkstatsAuthError, action=RetryAction.RETRY, reason="mine")]
    )
    CASES["user_policy"] = (LinkstatsGetLinkOperator, {"link_id": 1, "retry_policy": MINE})

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
