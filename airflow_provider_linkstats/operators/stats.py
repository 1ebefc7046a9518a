"""Statistics of a link (clicks by country, platform, referrer, ...) or of a website (visitors,
pageviews, ...), as rows or as a CSV file. Templated and mappable like every operator here:
``LinkstatsLinkStatsOperator.partial(...).expand(link_id=ids, name=["country", "platform"])``.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.contract import LINK_STATS, WEBSITE_STATS, StatsSpec
from airflow_provider_linkstats.operators.base import (
    REQUIRED,
    AnalyticsServiceMixin,
    Argument,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fails_fast,
    filter_arguments,
)

__all__ = ["LinkstatsLinkStatsOperator", "LinkstatsWebsiteStatsOperator"]


class LinkstatsStatsOperatorBase(LinkstatsBaseOperator):
    """One statistic of one record between two dates, every page walked: the rows, or with
    ``output_path`` the path of a CSV file of them (columns value, count), out of XCom."""

    stats: StatsSpec

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        day = "a date, datetime or ISO string such as ``{{ ds }}``"
        filters = {argument.name: argument for argument in filter_arguments(cls.stats)}
        return (
            cls.record_argument(f"the {cls.stats.subject}"),
            Argument("name", f"one of {', '.join(cls.stats.names)}.", REQUIRED, "str"),
            Argument("date_from", f"first day ({day}).", REQUIRED, "date | str"),
            Argument("date_to", "last day, included.", REQUIRED, "date | str"),
            Argument("search", "only values containing this text.", annotation="str"),
            filters["sort_by"],
            filters["sort"],
            Argument("max_items", "stop after this many rows (default: all).", annotation="int"),
            Argument("output_path", "write the rows to this CSV file and return its path.", annotation="str"),
        )

    @fails_fast
    def execute(self, context: Any) -> list[dict[str, Any]] | str:
        from airflow_provider_linkstats.client.checks import check_whole_number, is_blank
        from airflow_provider_linkstats.client.validation import validate_stats_query

        record_id = self.record_id(self.id_argument)
        filters = {"search": self.search, "sort_by": self.sort_by, "sort": self.sort}
        validate_stats_query(self.stats, self.name, self.date_from, self.date_to, filters)  # before any request
        max_items = None if is_blank(self.max_items) else check_whole_number("max_items", self.max_items)
        rows = list(
            self.hook.iter_stats(record_id, self.name, self.date_from, self.date_to, max_items=max_items, **filters)
        )
        total = sum(row["count"] for row in rows if isinstance(row.get("count"), int))
        self.log.info(
            "%s %s %s: %d values, %d in all (%s to %s)",
            self.stats.subject, record_id, self.name, len(rows), total, self.date_from, self.date_to,
        )  # fmt: skip
        if is_blank(self.output_path):
            return rows
        return write_csv(str(self.output_path), rows)


def write_csv(path: str, rows: list[dict[str, Any]]) -> str:
    import csv
    from pathlib import Path

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=("value", "count"), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return str(target)


class LinkstatsLinkStatsOperator(LinksServiceMixin, LinkstatsStatsOperatorBase):
    """Clicks of a short link per country, platform, referrer, ... between two dates."""

    stats = LINK_STATS


class LinkstatsWebsiteStatsOperator(AnalyticsServiceMixin, LinkstatsStatsOperatorBase):
    """A tracked website's visitors, pageviews, referrers, countries, ... between two dates."""

    stats = WEBSITE_STATS
