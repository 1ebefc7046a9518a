"""create -> get -> update -> delete, each later task given the create task's record (``create.output``).

Run by tests/integration/test_records_as_ids.py with dag.test().
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsGetLinkOperator,
    LinkstatsUpdateLinkOperator,
)

with DAG(
    "linkstats_test_records_as_ids",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    create = LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/launch", alias="launch")
    read = LinkstatsGetLinkOperator(task_id="read", link_id=create.output)
    change = LinkstatsUpdateLinkOperator(task_id="change", link_id=create.output, url="https://example.com/moved")
    delete = LinkstatsDeleteLinkOperator(task_id="delete", link_id=create.output)
    read >> change >> delete
