"""Dynamic task mapping over the link operators, run by tests/system/test_operator_dags.py with dag.test()."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsListLinksOperator,
)

with DAG(
    "linkstats_test_operator_mapping",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={"prefix": "mapped"},
) as dag:
    created = LinkstatsCreateLinkOperator.partial(task_id="create", if_exists="skip").expand_kwargs(
        [{"url": f"https://example.com/{i}", "alias": f"mapped-{i}"} for i in range(3)]
    )
    listed = LinkstatsListLinksOperator(task_id="list", search="{{ params.prefix }}", search_by="alias")

    @task
    def ids_of(records: list[dict]) -> list[int]:
        return [record["id"] for record in records]

    deleted = LinkstatsDeleteLinkOperator.partial(task_id="delete", missing_ok=True).expand(
        link_id=ids_of(listed.output)
    )
    created >> listed
