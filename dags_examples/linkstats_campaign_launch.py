"""Campaign launch: a tracked website, targeted links that expire, a wait, a report, cleanup.

Runs against the real services or the local emulator: only the two connections change
(``linkstats_links_default`` and ``linkstats_analytics_default``).

1. create the campaign's tracked website (skipped if the domain is tracked already);
2. create three campaign links: geographic and platform targeting expiring after N clicks,
   and an A/B rotation expiring at a date;
3. wait, deferred (no worker slot), until every link is Expired;
4. log and return the clicks per link, by country and by platform;
5. delete the links and the website (teardown tasks: they run even if the wait fails).
"""

from __future__ import annotations

import datetime as dt
import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator, LinkstatsDeleteLinkOperator
from airflow_provider_linkstats.operators.websites import (
    LinkstatsCreateWebsiteOperator,
    LinkstatsDeleteWebsiteOperator,
)
from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

# A killed worker or a failure that may pass: three more tries, a minute apart (the service's
# rate-limit window is a minute). Each try resumes; see docs/operators.md, "Retries and recovery".
RETRIES = {"retries": 3, "retry_delay": dt.timedelta(minutes=1)}

# How often the triggerer checks for expiry. A deployment setting rather than a per-run Param
# (Airflow does not template poke_interval); the demo sets it low to finish quickly.
POKE_INTERVAL = float(os.environ.get("LINKSTATS_CAMPAIGN_POKE_INTERVAL", "300"))
WAIT_TIMEOUT = float(os.environ.get("LINKSTATS_CAMPAIGN_WAIT_TIMEOUT", str(7 * 24 * 3600)))

with DAG(
    dag_id="linkstats_campaign_launch",
    description="Create a tracked website and targeted campaign links, wait for them to expire, report, clean up",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    default_args=RETRIES,
    tags=["linkstats", "example"],
    params={
        "campaign": Param("spring-sale", type="string", pattern="^[a-z0-9-]{3,40}$", description="Alias prefix"),
        "landing_url": Param("https://example.com/spring-sale", type="string", description="Default destination"),
        "website_domain": Param("spring-sale.example.com", type="string", description="Website to track"),
        "expire_after_clicks": Param(
            20, type="integer", minimum=1, description="Clicks that expire the targeted links"
        ),
        "expire_after_minutes": Param(60, type="integer", minimum=1, description="Lifetime of the A/B link"),
        "domain_id": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            description="Domain to shorten on; empty: the connection's default_domain_id, else the account's "
            "default domain, else the only domain the account can use",
        ),
    },
) as dag:
    website = LinkstatsCreateWebsiteOperator(
        task_id="create_website",
        domain="{{ params.website_domain }}",
        privacy=1,
        email_reports=1,
        exclude_params=["utm_source", "utm_medium", "utm_campaign"],
        if_exists="skip",
    )

    @task
    def plan_links(params: dict | None = None) -> list[dict]:
        """One create call per link; a retried run finds them again by alias (if_exists="skip")."""
        params = params or {}
        campaign, landing, clicks = params["campaign"], params["landing_url"], params["expire_after_clicks"]
        # A lifetime, counted when the create is sent: a create that waits in the queue (or a retry)
        # still gets the whole of it, where a moment computed here could have passed by then.
        lifetime = f"PT{int(params['expire_after_minutes'])}M"
        # None: the hook fills in the connection's default_domain_id, else the account's default or
        # only usable domain (real installs require one).
        domain = {"domain_id": params.get("domain_id")}
        return [
            {
                "url": landing,
                "alias": f"{campaign}-geo",
                "target_type": 1,
                "country": [
                    {"key": "US", "value": f"{landing}?region=us"},
                    {"key": "FR", "value": f"{landing}?region=fr"},
                    {"key": "DE", "value": f"{landing}?region=de"},
                ],
                "expiration_clicks": clicks,
                **domain,
            },
            {
                "url": landing,
                "alias": f"{campaign}-app",
                "target_type": 2,
                "platform": [
                    {"key": "iOS", "value": "https://apps.example.com/ios"},
                    {"key": "Android", "value": "https://apps.example.com/android"},
                ],
                "expiration_clicks": clicks,
                **domain,
            },
            {
                "url": landing,
                "alias": f"{campaign}-ab",
                "target_type": 4,
                "rotation": [{"value": f"{landing}?variant=a"}, {"value": f"{landing}?variant=b"}],
                "expires_at": lifetime,
                "expiration_url": f"{landing}?ended=1",
                **domain,
            },
        ]

    links = LinkstatsCreateLinkOperator.partial(task_id="create_links", if_exists="skip").expand_kwargs(plan_links())

    @task
    def link_ids(records: list[dict]) -> list[int]:
        return [record["id"] for record in records]

    ids = link_ids(links.output)

    wait = LinkstatsLinkExpiredSensor(
        task_id="wait_for_expiry",
        link_ids=ids,
        deferrable=True,
        poke_interval=POKE_INTERVAL,
        timeout=WAIT_TIMEOUT,
    )

    @task
    def report_clicks(link_ids: list[int], dag_run=None) -> dict[str, dict]:
        """Clicks per link, and by country and by platform, read before the teardown deletes them."""
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        hook = LinkstatsLinksHook()
        started = pendulum.instance(dag_run.start_date) if dag_run and dag_run.start_date else pendulum.now("UTC")
        days = {"date_from": started.subtract(days=1).to_date_string(), "date_to": pendulum.tomorrow("UTC")}
        report: dict[str, dict] = {}
        for link_id in link_ids:
            record = hook.get_link(link_id)
            report[record["alias"]] = {
                "clicks": int(record.get("clicks") or 0),
                **{
                    f"by_{name}": {row["value"]: row["count"] for row in hook.iter_link_stats(link_id, name, **days)}
                    for name in ("country", "platform")
                },
            }
        width = max(len(alias) for alias in report)
        lines = [f"{'alias'.ljust(width)}  clicks  by country / by platform"]
        for alias, numbers in report.items():
            countries = ", ".join(f"{k}: {v}" for k, v in numbers["by_country"].items()) or "-"
            platforms = ", ".join(f"{k}: {v}" for k, v in numbers["by_platform"].items()) or "-"
            lines.append(f"{alias.ljust(width)}  {numbers['clicks']:>6}  {countries} / {platforms}")
        print("Clicks per campaign link:\n" + "\n".join(lines))
        return report

    # The creates' own records, not `ids`: when one create fails, link_ids never runs, and the
    # teardown still deletes the links the other creates made.
    delete_links = LinkstatsDeleteLinkOperator(task_id="delete_links", link_ids=links.output, missing_ok=True)
    delete_website = LinkstatsDeleteWebsiteOperator(
        task_id="delete_website",
        website_id="{{ ti.xcom_pull(task_ids='create_website')['id'] }}",
        missing_ok=True,
    )

    clicks = report_clicks(ids)
    wait >> clicks
    clicks >> delete_links.as_teardown(setups=links)
    delete_links >> delete_website.as_teardown(setups=website)
