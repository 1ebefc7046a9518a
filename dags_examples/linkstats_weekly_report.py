"""Weekly report: top links by clicks with their referrers, and every tracked website with its
visitors and pageviews per day.

Time spans, stated in every title: the links' clicks are their all-time counters (the records'
``clicks``); referrers, visitors and pageviews cover the report window (``days`` up to today, UTC).

Writes CSV files and logs the same tables; with matplotlib installed (the ``demo`` extra) it also
draws PNG charts (without it, the charts are skipped with a log line, not a failure).
"""

from __future__ import annotations

import datetime as dt
import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.links import LinkstatsListLinksOperator
from airflow_provider_linkstats.operators.stats import LinkstatsLinkStatsOperator, LinkstatsWebsiteStatsOperator
from airflow_provider_linkstats.operators.websites import LinkstatsListWebsitesOperator

# A killed worker or a failure that may pass: three more tries, a minute apart (the service's
# rate-limit window is a minute). Each try resumes; see docs/operators.md, "Retries and recovery".
RETRIES = {"retries": 3, "retry_delay": dt.timedelta(minutes=1)}

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
    default_args=RETRIES,
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
        window: dict,
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
        span = _window_text(window)
        top_title = f"Top {len(links)} links by clicks, all time (as of {window['date_to']})"
        print(f"{top_title}:\n" + _table(links, LINK_COLUMNS))
        print(f"Referrers of the top links, {span}:\n" + _table(referrer_table, REFERRER_COLUMNS))
        print(f"{len(sites)} tracked websites:\n" + _table(sites, WEBSITE_COLUMNS))
        print(f"Unique visitors and pageviews per day, {span}:\n" + _table(traffic, TRAFFIC_COLUMNS))
        files.update(_charts(links, referrers, traffic, window, out, stamp))
        print(f"report written, {len(files)} files:\n" + "\n".join(f"  {path}" for path in files.values()))
        return {name: str(path) for name, path in files.items()}

    write_report(top_links.output, websites.output, referrers.output, visitors.output, pageviews.output, window)


def _by_value(rows: list[dict]) -> dict:
    return {row["value"]: row["count"] for row in rows}


def _table(rows: list[dict], columns: tuple[str, ...]) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _window_text(window: dict) -> str:
    """``2026-11-17 to 2026-11-23 (7 days, UTC)``: the report's window, whatever days had traffic."""
    days = pendulum.parse(window["date_to"]).diff(pendulum.parse(window["date_from"])).in_days() + 1
    return f"{window['date_from']} to {window['date_to']} ({days} day{'s' if days != 1 else ''}, UTC)"


def build_figures(links: list[dict], referrers: dict, traffic: list[dict], window: dict) -> dict:
    """The report's matplotlib figures by name; each figure's title states the time span its
    numbers cover, once.

    Link clicks are the records' all-time counters; referrers, visitors and pageviews cover the
    report window, the website chart day by day. Bars that are compared share one x axis with
    whole-number ticks (clicks are counts).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    span = _window_text(window)
    figures = {}

    figure, axes = plt.subplots(figsize=(8, 1.5 + 0.45 * max(len(links), 1)))
    axes.barh([link["alias"] for link in links][::-1], [int(link.get("clicks") or 0) for link in links][::-1])
    axes.set_xlabel("clicks since the link was created (all time)")
    axes.set_ylabel("link alias")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(f"Top {len(links)} links by clicks, all time (as of {window['date_to']})")
    figure.tight_layout()
    figures["links_png"] = figure

    shown = {alias: rows for alias, rows in referrers.items() if rows}
    if shown:
        figure, all_axes = plt.subplots(
            len(shown), 1, figsize=(8, 1.2 + 1.9 * len(shown)), squeeze=False, sharex=True
        )
        for axes, (alias, rows) in zip(all_axes[:, 0], shown.items(), strict=True):
            top = rows[:8][::-1]
            axes.barh([row["value"] or "(direct)" for row in top], [int(row["count"]) for row in top])
            axes.set_title(alias, fontsize=9, loc="left")  # the window is said once, in the figure's title
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        all_axes[-1, 0].set_xlabel("clicks by referrer (one scale for every link)")
        figure.suptitle(f"Referrers of the top links, {span}", fontsize=11)
        figure.tight_layout()
        figures["referrers_png"] = figure

    if traffic:
        # One line per website and day of the window, as the log's table shows them (a day without
        # traffic is a 0). A day's visitors are unique for that day only: they are not summed.
        first, last = pendulum.parse(window["date_from"]), pendulum.parse(window["date_to"])
        days = [first.add(days=n).to_date_string() for n in range(last.diff(first).in_days() + 1)]
        domains = sorted({row["domain"] for row in traffic})
        figure, panels = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
        for domain in domains:
            by_day = {row["day"]: row for row in traffic if row["domain"] == domain}
            for axes, kind in zip(panels, ("visitors", "pageviews"), strict=True):
                counts = [int(by_day.get(day, {}).get(kind, 0)) for day in days]
                axes.plot(range(len(days)), counts, marker="o", label=domain)
        panels[0].set_ylabel("unique visitors\n(of that day)")
        panels[1].set_ylabel("pageviews")
        for axes in panels:
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_ylim(bottom=0)
        panels[1].set_xlabel("day (UTC)")
        panels[1].set_xticks(range(len(days)), [day[5:] for day in days])  # MM-DD; the year is in the title
        panels[0].legend(fontsize=8, title="website", title_fontsize=8)
        figure.suptitle(f"Websites: unique visitors and pageviews per day, {span}", fontsize=11)
        figure.tight_layout()
        figures["traffic_png"] = figure
    return figures


def _charts(links: list[dict], referrers: dict, traffic: list[dict], window: dict, out, stamp: str) -> dict:
    """PNG charts of the report; none (and a log line) without matplotlib."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: charts skipped (pip install 'airflow-provider-linkstats[demo]')")
        return {}
    charts = {}
    names = {"links_png": "top_links", "referrers_png": "referrers", "traffic_png": "website_traffic"}
    for key, figure in build_figures(links, referrers, traffic, window).items():
        charts[key] = out / f"{names[key]}_{stamp}.png"
        figure.savefig(charts[key])
        plt.close(figure)
    return charts
