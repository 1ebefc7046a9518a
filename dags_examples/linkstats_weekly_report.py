"""Weekly report: top links by clicks with their referrers, and every tracked website with its
visitors and pageviews per day.

Writes CSV files and logs the same tables; with matplotlib installed (the ``demo`` extra) it also
draws PNG charts (without it, the charts are skipped with a log line, not a failure).
"""

from __future__ import annotations

import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.links import LinkstatsListLinksOperator
from airflow_provider_linkstats.operators.stats import LinkstatsLinkStatsOperator, LinkstatsWebsiteStatsOperator
from airflow_provider_linkstats.operators.websites import LinkstatsListWebsitesOperator

LINK_COLUMNS = ("id", "alias", "short_url", "url", "clicks", "status")
REFERRER_COLUMNS = ("alias", "referrer", "clicks")
WEBSITE_COLUMNS = ("id", "domain", "privacy", "email", "exclude_bots", "created_at")
TRAFFIC_COLUMNS = ("domain", "day", "visitors", "pageviews")

with DAG(
    dag_id="linkstats_weekly_report",
    description="Top links by clicks and all tracked websites, as CSV, log tables and a chart",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["linkstats", "example"],
    params={
        "top_n": Param(10, type="integer", minimum=1, maximum=1000, description="How many links to rank"),
        "days": Param(7, type="integer", minimum=1, maximum=366, description="Days of traffic, up to today"),
        "output_dir": Param(
            os.path.join(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "linkstats-reports"),
            type="string",
            description="Where the files go (default: linkstats-reports in the Airflow home)",
        ),
    },
) as dag:
    top_links = LinkstatsListLinksOperator(
        task_id="top_links", sort_by="clicks", sort="desc", max_items="{{ params.top_n }}"
    )
    websites = LinkstatsListWebsitesOperator(task_id="websites", sort_by="domain", sort="asc")

    @task(multiple_outputs=True)
    def report_window(params: dict | None = None) -> dict[str, str]:
        """The days the statistics cover (both included), up to today in UTC."""
        today = pendulum.today("UTC")
        return {
            "date_from": today.subtract(days=(params or {})["days"] - 1).to_date_string(),
            "date_to": today.to_date_string(),
        }

    @task
    def ids(records: list[dict]) -> list[int]:
        return [record["id"] for record in records]

    window = report_window()
    # One mapped task per link or website: each a few calls, retried on its own.
    referrers = LinkstatsLinkStatsOperator.partial(
        task_id="referrers", name="referrer", date_from=window["date_from"], date_to=window["date_to"]
    ).expand(link_id=ids(top_links.output))
    site_ids = ids.override(task_id="website_ids")(websites.output)
    visitors = LinkstatsWebsiteStatsOperator.partial(
        task_id="visitors", name="visitors", date_from=window["date_from"], date_to=window["date_to"]
    ).expand(website_id=site_ids)
    pageviews = LinkstatsWebsiteStatsOperator.partial(
        task_id="pageviews", name="pageviews", date_from=window["date_from"], date_to=window["date_to"]
    ).expand(website_id=site_ids)

    # An account without links or websites maps the stats tasks over nothing (they are skipped):
    # the report is still written, with empty tables.
    @task(trigger_rule="none_failed")
    def write_report(
        links: list[dict],
        sites: list[dict],
        referrer_rows: list[list[dict]],
        visitor_rows: list[list[dict]],
        pageview_rows: list[list[dict]],
        params: dict | None = None,
    ) -> dict[str, str]:
        import csv
        from pathlib import Path

        from airflow_provider_linkstats.client.records import link_status

        # Mapped over nothing (no links or websites), the stats tasks are skipped and give nothing.
        links, sites = links or [], sites or []
        referrer_rows, visitor_rows, pageview_rows = referrer_rows or [], visitor_rows or [], pageview_rows or []
        # Real installs send no status: it follows from ends_at, clicks and disabled.
        links = [{**link, "status": link_status(link).name.title()} for link in links]
        # Mapped results come back in map-index order, the order the ids were given in.
        referrers = {link["alias"]: rows for link, rows in zip(links, referrer_rows, strict=True)}
        traffic = [
            {"domain": site["domain"], "day": day, "visitors": visits.get(day, 0), "pageviews": views.get(day, 0)}
            for site, visit_list, view_list in zip(sites, visitor_rows, pageview_rows, strict=True)
            for visits, views in [(_by_value(visit_list), _by_value(view_list))]
            for day in sorted(set(visits) | set(views))
        ]
        params = params or {}
        out = Path(params["output_dir"])
        out.mkdir(parents=True, exist_ok=True)
        stamp = pendulum.now("UTC").format("YYYYMMDD-HHmmss")
        files = {
            "links_csv": out / f"top_links_{stamp}.csv",
            "referrers_csv": out / f"referrers_{stamp}.csv",
            "websites_csv": out / f"websites_{stamp}.csv",
            "traffic_csv": out / f"website_traffic_{stamp}.csv",
        }
        referrer_table = [
            {"alias": alias, "referrer": row["value"] or "(direct)", "clicks": row["count"]}
            for alias, rows in referrers.items()
            for row in rows
        ]
        for path, rows, columns in (
            (files["links_csv"], links, LINK_COLUMNS),
            (files["referrers_csv"], referrer_table, REFERRER_COLUMNS),
            (files["websites_csv"], sites, WEBSITE_COLUMNS),
            (files["traffic_csv"], traffic, TRAFFIC_COLUMNS),
        ):
            with path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
        print(f"Top {len(links)} links by clicks:\n" + _table(links, LINK_COLUMNS))
        print("Referrers of the top links:\n" + _table(referrer_table, REFERRER_COLUMNS))
        print(f"{len(sites)} tracked websites:\n" + _table(sites, WEBSITE_COLUMNS))
        print("Visitors and pageviews per day:\n" + _table(traffic, TRAFFIC_COLUMNS))
        files.update(_charts(links, referrers, traffic, out, stamp))
        print("report written: " + ", ".join(str(p) for p in files.values()))
        return {name: str(path) for name, path in files.items()}

    write_report(top_links.output, websites.output, referrers.output, visitors.output, pageviews.output)


def _by_value(rows: list[dict]) -> dict:
    return {row["value"]: row["count"] for row in rows}


def _table(rows: list[dict], columns: tuple[str, ...]) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _charts(links: list[dict], referrers: dict, traffic: list[dict], out, stamp: str) -> dict:
    """PNG charts of the report; none (and a log line) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: charts skipped (pip install 'airflow-provider-linkstats[demo]')")
        return {}
    charts = {}

    figure, axes = plt.subplots(figsize=(8, 4))
    axes.barh([link["alias"] for link in links][::-1], [int(link.get("clicks") or 0) for link in links][::-1])
    axes.set_xlabel("clicks")
    axes.set_title("Top links by clicks")
    figure.tight_layout()
    charts["links_png"] = out / f"top_links_{stamp}.png"
    figure.savefig(charts["links_png"])
    plt.close(figure)

    shown = {alias: rows for alias, rows in referrers.items() if rows}
    if shown:
        figure, all_axes = plt.subplots(len(shown), 1, figsize=(8, 2.2 * len(shown)), squeeze=False)
        for axes, (alias, rows) in zip(all_axes[:, 0], shown.items(), strict=True):
            top = rows[:8][::-1]
            axes.barh([row["value"] or "(direct)" for row in top], [row["count"] for row in top])
            axes.set_title(f"{alias}: clicks by referrer", fontsize=10)
        figure.tight_layout()
        charts["referrers_png"] = out / f"referrers_{stamp}.png"
        figure.savefig(charts["referrers_png"])
        plt.close(figure)

    if traffic:
        # Totals over the window per website, visitors beside pageviews (a day-by-day line needs
        # several days of traffic; the bars read the same for one day or many).
        domains = sorted({row["domain"] for row in traffic})
        totals = {
            kind: [sum(row[kind] for row in traffic if row["domain"] == domain) for domain in domains]
            for kind in ("visitors", "pageviews")
        }
        days = sorted({row["day"] for row in traffic})
        figure, axes = plt.subplots(figsize=(8, 1.5 + 0.9 * len(domains)))
        positions = range(len(domains))
        axes.barh([p + 0.2 for p in positions], totals["visitors"], height=0.4, label="visitors")
        axes.barh([p - 0.2 for p in positions], totals["pageviews"], height=0.4, label="pageviews")
        axes.set_yticks(list(positions), domains)
        axes.set_title(f"Websites: visitors and pageviews, {days[0]} to {days[-1]}")
        axes.legend(fontsize=8)
        figure.tight_layout()
        charts["traffic_png"] = out / f"website_traffic_{stamp}.png"
        figure.savefig(charts["traffic_png"])
        plt.close(figure)
    return charts
