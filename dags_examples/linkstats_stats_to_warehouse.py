"""Statistics into a warehouse, every day: clicks per link and day, and each website's visitors
and pageviews per day, into two tables of a SQL database (any common-sql connection).

Each run loads the service days that end in its data interval, in the zone the service counts
them in (UTC on phpShort 44-45 and phpAnalytics, the account's zone on phpShort 46+), each day replaced whole:
a cleared run, a retry or a backfill (``catchup=True``, or ``airflow backfill create`` on Airflow 3,
``airflow dags backfill --reset-dagruns`` on 2.11) leaves each day in the table exactly once. Only
links whose clicks counter moved since the last load are fetched (every link on the first run
into a new table).

It is scheduled at midnight in the account's zone (``LINKSTATS_ACCOUNT_ZONE``, the ``timezone`` of
``GET /account``) with data intervals, on Airflow 2.11 and 3 alike: the run of logical date
2026-03-08 loads the account's 2026-03-08 (23 hours that day in New York), just after it ends.

The default connection ``linkstats_warehouse`` is a SQLite file under the Airflow home (the
``warehouse`` extra installs Airflow's SQLite provider)::

    airflow connections add linkstats_warehouse --conn-type sqlite --conn-host "$AIRFLOW_HOME/linkstats_warehouse.db"

Any other SQL connection works in its place (``sql_conn_id``); its table is then the asset to
schedule on (``postgres://host:5432/db/public/linkstats_link_clicks_daily`` for PostgreSQL).

The second DAG, ``linkstats_warehouse_top_links``, is scheduled on the clicks table: it runs after
each load and logs the week's most clicked links from the table.
"""

from __future__ import annotations

import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, Param, task
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_provider_linkstats.operators.warehouse import (
    LinkstatsLinkStatsToWarehouseOperator,
    LinkstatsWebsiteStatsToWarehouseOperator,
)

# The account's time zone: runs at its midnights, each loading the day of its logical date.
ACCOUNT_ZONE = os.environ.get("LINKSTATS_ACCOUNT_ZONE", "America/New_York")
WAREHOUSE_FILE = os.path.join(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "linkstats_warehouse.db")
CLICKS_TABLE = "linkstats_link_clicks_daily"
WEBSITES_TABLE = "linkstats_website_traffic_daily"
# The default connection's table as an asset: its connection URI (sqlite:// + the file's path) and the table.
CLICKS_ASSET = Asset(f"sqlite://{WAREHOUSE_FILE}/{CLICKS_TABLE}")

with DAG(
    dag_id="linkstats_stats_to_warehouse",
    description="Clicks per link and day, visitors and pageviews per website and day, into SQL tables",
    # Data intervals from midnight to midnight in the account's zone (Airflow 3's plain "@daily" has
    # empty ones: each run would load the day that ended last, not the day of its logical date).
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone=ACCOUNT_ZONE),
    start_date=pendulum.datetime(2026, 1, 1, tz=ACCOUNT_ZONE),
    catchup=False,  # True loads every day since start_date, each once
    max_active_runs=3,
    tags=["linkstats", "example"],
    params={
        "sql_conn_id": Param("linkstats_warehouse", type="string", description="Any common-sql connection"),
        "table": Param(CLICKS_TABLE, type="string", description="Clicks per link and day (link_id, day, zone, clicks)"),
        "websites_table": Param(
            WEBSITES_TABLE, type="string", description="Visitors and pageviews per website and day"
        ),
    },
) as dag:
    LinkstatsLinkStatsToWarehouseOperator(
        task_id="link_clicks",
        sql_conn_id="{{ params.sql_conn_id }}",
        table="{{ params.table }}",
        outlets=[CLICKS_ASSET],
        retries=2,
    )
    LinkstatsWebsiteStatsToWarehouseOperator(
        task_id="website_traffic",
        sql_conn_id="{{ params.sql_conn_id }}",
        table="{{ params.websites_table }}",
        retries=2,
    )


with DAG(
    dag_id="linkstats_warehouse_top_links",
    description="After each load: the week's most clicked links, read from the warehouse table",
    schedule=[CLICKS_ASSET],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["linkstats", "example"],
    params={"sql_conn_id": Param("linkstats_warehouse", type="string"), "table": Param(CLICKS_TABLE, type="string")},
) as top_links_dag:

    @task
    def top_links(params: dict | None = None) -> list[dict]:
        """The 10 links with the most clicks over the last 7 days loaded (days of the account's zone)."""
        from airflow.providers.common.compat.sdk import BaseHook

        from airflow_provider_linkstats.drivers.sinks import check_table

        params = params or {}
        table = check_table(params["table"])
        hook = BaseHook.get_connection(params["sql_conn_id"]).get_hook()
        last = hook.get_first(f"SELECT MAX(day) FROM {table}")[0]
        if last is None:
            print(f"{table} is empty")
            return []
        since = (pendulum.parse(str(last)[:10]).date() - pendulum.duration(days=6)).isoformat()
        rows = hook.get_records(
            f"SELECT link_id, SUM(clicks) AS total, MIN(day), MAX(day), MIN(zone) FROM {table} "
            f"WHERE day >= {hook.placeholder} GROUP BY link_id ORDER BY total DESC, link_id LIMIT 10",
            parameters=(since,),
        )
        ranked = [
            {
                "link_id": row[0],
                "clicks": int(row[1]),
                "first_day": str(row[2]),
                "last_day": str(row[3]),
                "zone": row[4],
            }
            for row in rows
        ]
        for rank, row in enumerate(ranked, 1):
            print(
                f"{rank:>2}. link {row['link_id']}: {row['clicks']} clicks "
                f"({row['first_day']} to {row['last_day']}, days of {row['zone']})"
            )
        return ranked

    top_links()
