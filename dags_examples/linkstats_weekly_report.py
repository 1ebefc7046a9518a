"""Weekly report: top links by clicks and every tracked website.

Writes CSV files and logs the same tables; with matplotlib installed it also draws a PNG bar
chart of the top links (without it, the chart is skipped with a log line, not a failure).
"""

from __future__ import annotations

import os

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.links import LinkstatsListLinksOperator
from airflow_provider_linkstats.operators.websites import LinkstatsListWebsitesOperator

LINK_COLUMNS = ("id", "alias", "short_url", "url", "clicks", "status")
WEBSITE_COLUMNS = ("id", "domain", "privacy", "email", "exclude_bots", "created_at")

with DAG(
    dag_id="linkstats_weekly_report",
    description="Top links by clicks and all tracked websites, as CSV, log tables and a chart",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["linkstats", "example"],
    params={
        "top_n": Param(10, type="integer", minimum=1, maximum=1000, description="How many links to rank"),
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

    @task
    def write_report(links: list[dict], sites: list[dict], params: dict | None = None) -> dict[str, str]:
        import csv
        from pathlib import Path

        from airflow_provider_linkstats.client.records import link_status

        # Real installs send no status: it follows from ends_at, clicks and disabled.
        links = [{**link, "status": link_status(link).name.title()} for link in links]
        params = params or {}
        out = Path(params["output_dir"])
        out.mkdir(parents=True, exist_ok=True)
        stamp = pendulum.now("UTC").format("YYYYMMDD-HHmmss")
        files = {
            "links_csv": out / f"top_links_{stamp}.csv",
            "websites_csv": out / f"websites_{stamp}.csv",
        }
        for path, rows, columns in (
            (files["links_csv"], links, LINK_COLUMNS),
            (files["websites_csv"], sites, WEBSITE_COLUMNS),
        ):
            with path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
        print(f"Top {len(links)} links by clicks:\n" + _table(links, LINK_COLUMNS))
        print(f"{len(sites)} tracked websites:\n" + _table(sites, WEBSITE_COLUMNS))
        chart = _bar_chart(links, out / f"top_links_{stamp}.png")
        if chart:
            files["chart_png"] = chart
        print("report written: " + ", ".join(str(p) for p in files.values()))
        return {name: str(path) for name, path in files.items()}

    write_report(top_links.output, websites.output)


def _table(rows: list[dict], columns: tuple[str, ...]) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _bar_chart(links: list[dict], path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: chart skipped")
        return None
    figure, axes = plt.subplots(figsize=(8, 4))
    axes.barh([link["alias"] for link in links][::-1], [int(link.get("clicks") or 0) for link in links][::-1])
    axes.set_xlabel("clicks")
    axes.set_title("Top links by clicks")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
