"""A sensor asked to start from the triggerer with a templated input, run by tests/system/test_airflow_versions.py.

Airflow 3.3 keeps start_from_trigger (its triggerer renders the template); older versions drop it
with a warning at parse time and defer from a worker. dag.test() runs it either way.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

with DAG(
    "linkstats_test_start_from_trigger_templated",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
) as dag:
    wait = LinkstatsLinkExpiredSensor(
        task_id="wait",
        link_id="{{ dag_run.conf['link_id'] }}",
        start_from_trigger=True,
        poke_interval=0.2,
        timeout=30,
    )

    @task
    def check(record, dag_run=None):
        assert record["id"] == int(dag_run.conf["link_id"]), record

    check(wait.output)
