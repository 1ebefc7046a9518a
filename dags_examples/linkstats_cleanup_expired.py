"""Daily cleanup: delete expired links older than a threshold, in bulk.

Expired links are listed once (every page), the old ones picked by ``created_at``, then deleted
on a bounded thread pool with progress in the task log ("deleted 300/1200 links").
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.client import LinkStatus
from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator, LinkstatsListLinksOperator

with DAG(
    dag_id="linkstats_cleanup_expired",
    description="Delete expired links older than a threshold",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["linkstats", "example"],
    params={
        "older_than_days": Param(30, type="integer", minimum=0, description="Keep expired links younger than this"),
        "max_links": Param(10000, type="integer", minimum=1, description="At most this many deletions per run"),
        "max_workers": Param(8, type="integer", minimum=1, maximum=16, description="Concurrent deletes"),
    },
) as dag:
    expired = LinkstatsListLinksOperator(
        task_id="list_expired", status=int(LinkStatus.EXPIRED), sort_by="id", sort="asc"
    )

    @task
    def pick_old(records: list[dict], params: dict | None = None) -> list[int]:
        params = params or {}
        cutoff = pendulum.now("UTC").subtract(days=params["older_than_days"])
        old, undated = [], 0
        for record in records:
            created = record.get("created_at")
            if not created:
                undated += 1
                continue
            if pendulum.parse(created) < cutoff:
                old.append(record["id"])
        print(
            f"{len(records)} expired links; {len(old)} created before {cutoff.to_iso8601_string()}; "
            f"{undated} without created_at left alone"
        )
        return old[: params["max_links"]]

    old_ids = pick_old(expired.output)

    deleted = LinkstatsDeleteLinkOperator(
        task_id="delete_old",
        link_ids=old_ids,
        missing_ok=True,
        max_workers="{{ params.max_workers }}",
    )

    @task
    def summary(expired_records: list[dict], deleted_ids: list[int]) -> dict[str, int]:
        result = {
            "expired": len(expired_records),
            "deleted": len(deleted_ids),
            "kept": len(expired_records) - len(deleted_ids),
        }
        print(f"cleanup summary: {result}")
        return result

    summary(expired.output, deleted.output)
