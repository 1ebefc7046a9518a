"""Bulk launch: a campaign of a few hundred links from a CSV file, in one task.

Runs against the real service or the local emulator: only the connection changes
(``linkstats_links_default``).

1. write the campaign's CSV (one row per product: its SKU, landing page, click limit, and country
   targeting for every third one) to an object-storage URL: ``file://`` here, ``s3://`` or
   ``gs://`` work the same way;
2. create every link with ``LinkstatsBulkCreateLinksOperator``: the aliases come from the SKU
   column with the campaign as prefix; one listing walk finds links an earlier try created, the
   rest are created concurrently within the service's rate limit (60 requests a minute on real
   installs: 300 links take about five minutes);
3. log the result: how many were created or already there, and a few short URLs.
"""

from __future__ import annotations

import datetime as dt
import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator

# A killed worker or a failure that may pass: three more tries, a minute apart (the service's
# rate-limit window is a minute). Each try resumes; see docs/operators.md, "Retries and recovery".
RETRIES = {"retries": 3, "retry_delay": dt.timedelta(minutes=1)}
# The links service's connection (the deployment tests point it at an emulator of their own).
CONN_ID = os.environ.get("LINKSTATS_BULK_LAUNCH_CONN_ID", "linkstats_links_default")

with DAG(
    dag_id="linkstats_bulk_launch",
    description="Create a campaign's few hundred links from a CSV file in one resumable task",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    default_args=RETRIES,
    tags=["linkstats", "example"],
    params={
        "campaign": Param("autumn", type="string", pattern="^[a-z0-9-]{3,30}$", description="Alias prefix"),
        "count": Param(300, type="integer", minimum=1, maximum=5000, description="Links in the campaign"),
        "landing_url": Param("https://shop.example.com/autumn", type="string", description="Landing page"),
        "expire_after_days": Param(30, type="integer", minimum=1, description="Lifetime of every link"),
        "workdir": Param(
            "file:///tmp/linkstats-bulk-launch",
            type="string",
            description="Object-storage URL of a folder for the CSV and the result (file://, s3://, gs://, ...)",
        ),
    },
) as dag:

    @task
    def write_campaign_csv(params: dict | None = None) -> str:
        """The campaign's CSV, the same rows for the same params, whenever it is written: a rerun (a
        clear of the whole run) writes what the first run wrote, so the links an earlier try made hold
        every field of their rows and are this task's own (docs/operators.md, "Whose record is it")."""
        import csv
        import io
        import json

        from airflow.providers.common.compat.sdk import ObjectStoragePath

        params = params or {}
        landing, campaign = params["landing_url"], params["campaign"]
        ends = f"P{params['expire_after_days']}D"  # a duration: each link's lifetime from its own create
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["sku", "url", "expires_at", "expiration_clicks", "country"])
        for number in range(1, params["count"] + 1):
            sku = f"SKU {number:04d}"
            country = ""
            if number % 3 == 0:  # every third product: a landing page per country
                country = json.dumps([{"key": k, "value": f"{landing}/{k.lower()}?sku={number}"} for k in ("US", "FR")])
            writer.writerow([sku, f"{landing}?sku={number}", ends, 100 + number % 5 * 100, country])
        folder = ObjectStoragePath(params["workdir"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{campaign}.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8")
        return str(path)

    csv_url = write_campaign_csv()

    launch = LinkstatsBulkCreateLinksOperator(
        task_id="create_links",
        linkstats_conn_id=CONN_ID,
        source=csv_url,
        alias_column="sku",  # "SKU 0001" -> autumn-sku-0001
        alias_prefix="{{ params.campaign }}-",
        if_exists="skip",  # a retry or a second run keeps what exists and creates the rest
        xcom_limit=100,  # above it, the alias -> id and short URL map goes to <csv>.result.json
    )

    @task
    def report(result: dict) -> dict:
        from airflow_provider_linkstats.operators.launch import launch_result

        links = launch_result(result)
        sample = sorted(links.items())[:5]
        print(
            f"{result['total']} links: {result['created']} created, {result['skipped']} already there, "
            f"{result['updated']} mended, {result['failed']} failed"
        )
        for alias, link in sample:
            print(f"  {alias}: {link['short_url']} (id {link['id']})")
        return {"links": len(links), "first": sample[0][1]["short_url"] if sample else None}

    report(launch.output)
