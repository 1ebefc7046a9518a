"""Run by tests/system/test_secrets_in_airflow.py: every kind of task, with link and website passwords.

The passwords come from Airflow Variables (AIRFLOW_VAR_* in the test), the way a DAG should get
them; the test then scans the task logs, XComs, rendered fields and trigger rows for them.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsGetLinkOperator,
    LinkstatsListLinksOperator,
    LinkstatsUpdateLinkOperator,
)
from airflow_provider_linkstats.operators.websites import (
    LinkstatsCreateWebsiteOperator,
    LinkstatsDeleteWebsiteOperator,
    LinkstatsUpdateWebsiteOperator,
)
from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

ALIAS = "secret-scan"
LINK_ID = "{{ ti.xcom_pull(task_ids='create_link')['id'] }}"
WEBSITE_ID = "{{ ti.xcom_pull(task_ids='create_website')['id'] }}"

with DAG(
    "linkstats_secrets_scan",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["linkstats-tests"],
) as dag:
    create_link = LinkstatsCreateLinkOperator(
        task_id="create_link",
        url="https://example.com/secret-scan",
        alias=ALIAS,
        privacy=2,
        password="{{ var.value.linkstats_link_password }}",
        privacy_password="{{ var.value.linkstats_privacy_password }}",
        expiration_clicks=1,
        if_exists="skip",
    )
    update_link = LinkstatsUpdateLinkOperator(
        task_id="update_link",
        link_id=LINK_ID,
        password="{{ var.value.linkstats_link_password }}",
        expiration_url="https://example.com/secret-scan/over",
    )
    get_link = LinkstatsGetLinkOperator(task_id="get_link", link_id=LINK_ID)
    list_links = LinkstatsListLinksOperator(task_id="list_links", search=ALIAS, search_by="alias")
    wait = LinkstatsLinkExpiredSensor(
        task_id="wait_for_expiry", link_id=create_link.output, deferrable=True, poke_interval=0.5, timeout=120
    )
    delete_link = LinkstatsDeleteLinkOperator(task_id="delete_link", link_id=LINK_ID)

    create_website = LinkstatsCreateWebsiteOperator(
        task_id="create_website",
        domain="secret-scan.example.com",
        privacy=2,
        password="{{ var.value.linkstats_website_password }}",
        if_exists="skip",
    )
    update_website = LinkstatsUpdateWebsiteOperator(
        task_id="update_website", website_id=WEBSITE_ID, password="{{ var.value.linkstats_website_password }}"
    )
    delete_website = LinkstatsDeleteWebsiteOperator(task_id="delete_website", website_id=WEBSITE_ID)

    create_link >> update_link >> get_link >> list_links >> wait >> delete_link
    create_website >> update_website >> delete_website
