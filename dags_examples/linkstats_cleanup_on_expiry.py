"""Cleanup driven by events: each link is deleted soon after it expires (Airflow 3).

An ``Asset`` is watched by ``LinkstatsLinksExpiredEventTrigger`` in the triggerer, which walks
the Expired listing every ``poke_interval`` and reports each newly expired link once. Every
report is an asset event, and the asset schedules this DAG: each run deletes exactly the links
of the events that triggered it (in bulk, ``missing_ok``, so a link deleted meanwhile is fine).

Needs Airflow 3 (``AssetWatcher``); on Airflow 2 this file defines no DAG and says why. Compared
with the daily ``linkstats_cleanup_expired``, see the docs page "Cleanup: daily or on expiry".
"""

from __future__ import annotations

import datetime as dt
import logging
import os

import pendulum
from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_0_PLUS

# A killed worker or a failure that may pass: three more tries, a minute apart (the service's
# rate-limit window is a minute). Each try resumes; see docs/operators.md, "Retries and recovery".
RETRIES = {"retries": 3, "retry_delay": dt.timedelta(minutes=1)}

# Read once per parse and constant per deployment: the trigger's kwargs must not change between
# parses, or Airflow would see a new watcher each time.
POKE_INTERVAL = float(os.environ.get("LINKSTATS_EXPIRY_POKE_INTERVAL", "60"))
# The connection of the account to clean up (the tests' shared deployment gives this DAG an
# account of its own, so that it does not delete the campaign DAG's links).
CONN_ID = os.environ.get("LINKSTATS_EXPIRY_CONN_ID", "linkstats_links_default")
# Only the links whose alias contains this text (unset: every link of the account), so that one
# campaign's cleanup never deletes another's links while they are still awaited.
ALIAS_SEARCH = os.environ.get("LINKSTATS_EXPIRY_ALIAS_SEARCH") or None
WATCHED = {"search": ALIAS_SEARCH, "search_by": "alias"} if ALIAS_SEARCH else {}

if not AIRFLOW_V_3_0_PLUS:
    logging.getLogger(__name__).warning(
        "linkstats_cleanup_on_expiry skipped: event-driven scheduling (AssetWatcher) needs Airflow 3; "
        "use the daily linkstats_cleanup_expired DAG on Airflow 2"
    )
else:
    from airflow.sdk import DAG, Asset, AssetWatcher, Param, task

    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator
    from airflow_provider_linkstats.triggers.links import LinkstatsLinksExpiredEventTrigger

    expired_links = Asset(
        "linkstats_expired_links",
        watchers=[
            AssetWatcher(
                name="linkstats_expired_links_watcher",
                trigger=LinkstatsLinksExpiredEventTrigger(
                    linkstats_conn_id=CONN_ID, poke_interval=POKE_INTERVAL, **WATCHED
                ),
            )
        ],
    )

    with DAG(
        dag_id="linkstats_cleanup_on_expiry",
        description="Delete links as they expire (asset events from the triggerer)",
        schedule=[expired_links],
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        default_args=RETRIES,
        tags=["linkstats", "example"],
        params={
            "max_workers": Param(8, type="integer", minimum=1, maximum=16, description="Concurrent deletes"),
        },
    ) as dag:

        @task
        def expired_in_events(triggering_asset_events=None) -> list[int]:
            """The ids reported by the asset events of this run, each once, in report order."""
            ids: dict[int, None] = {}
            events = [event for per_asset in (triggering_asset_events or {}).values() for event in per_asset]
            for event in events:
                payload = (event.extra or {}).get("payload") or {}
                ids.update((record["id"], None) for record in payload.get("links", []))
            print(f"{len(ids)} expired links reported by {len(events)} asset events")
            return list(ids)

        LinkstatsDeleteLinkOperator(
            task_id="delete_expired",
            linkstats_conn_id=CONN_ID,
            link_ids=expired_in_events(),
            missing_ok=True,
            max_workers="{{ params.max_workers }}",
        )
