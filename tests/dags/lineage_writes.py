"""Every write operator once, run by tests/system/test_lineage.py with OpenLineage's file transport."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsListLinksOperator,
    LinkstatsUpdateLinkOperator,
)
from airflow_provider_linkstats.operators.websites import (
    LinkstatsCreateWebsiteOperator,
    LinkstatsDeleteWebsiteOperator,
    LinkstatsUpdateWebsiteOperator,
)

with DAG(
    "linkstats_test_lineage_writes",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    create_link = LinkstatsCreateLinkOperator(task_id="create_link", url="https://example.com/a", alias="lineage-a")
    update_link = LinkstatsUpdateLinkOperator(
        task_id="update_link", link_id="{{ ti.xcom_pull('create_link')['id'] }}", url="https://example.com/b"
    )
    delete_link = LinkstatsDeleteLinkOperator(task_id="delete_link", link_id="{{ ti.xcom_pull('create_link')['id'] }}")
    create_link >> update_link >> delete_link

    # The test seeds links aliased bulk-*; they are listed, then deleted in one bulk task.
    listed = LinkstatsListLinksOperator(task_id="list_bulk", search="bulk-", search_by="alias")

    @task
    def ids_of(records: list[dict]) -> list[int]:
        return [record["id"] for record in records]

    LinkstatsDeleteLinkOperator(task_id="delete_bulk", link_ids=ids_of(listed.output))

    create_site = LinkstatsCreateWebsiteOperator(task_id="create_website", domain="lineage.example.com")
    update_site = LinkstatsUpdateWebsiteOperator(
        task_id="update_website", website_id="{{ ti.xcom_pull('create_website')['id'] }}", exclude_bots=1
    )
    delete_site = LinkstatsDeleteWebsiteOperator(
        task_id="delete_website", website_ids=["{{ ti.xcom_pull('create_website')['id'] }}"]
    )
    create_site >> update_site >> delete_site
