"""Statistics of a link (clicks by country, platform, referrer, ...) or of a website (visitors,
pageviews, ...), as rows or as a CSV file. Templated and mappable like every operator here:
``LinkstatsLinkStatsOperator.partial(...).expand(link_id=ids, name=["country", "platform"])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import LINK_STATS, WEBSITE_STATS, StatsSpec
from airflow_provider_linkstats.operators.base import (
    AnalyticsServiceMixin,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fails_fast,
)

__all__ = ["LinkstatsStatsOperatorBase", "LinkstatsLinkStatsOperator", "LinkstatsWebsiteStatsOperator"]

STATS_TEMPLATE_FIELDS = (
    "linkstats_conn_id",
    "name",
    "date_from",
    "date_to",
    "search",
    "sort_by",
    "sort",
    "output_path",
)


class LinkstatsStatsOperatorBase(LinkstatsBaseOperator):
    """One statistic of one record between two dates, every page walked.

    Returns the rows (``[{"value": ..., "count": int}, ...]``), or, with ``output_path``, writes
    them to that CSV file (columns value, count) and returns its path, so a large table stays out
    of XCom.
    """

    stats: StatsSpec
    id_argument: str

    def __init__(
        self,
        *,
        name: str,
        date_from: Any,
        date_to: Any,
        search: str | None = None,
        sort_by: str | None = None,
        sort: str | None = None,
        max_items: int | None = None,
        output_path: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.date_from = date_from
        self.date_to = date_to
        self.search = search
        self.sort_by = sort_by
        self.sort = sort
        self.max_items = max_items
        self.output_path = output_path

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
            self.stats.subject,
            record_id,
            self.name,
            len(rows),
            total,
            self.date_from,
            self.date_to,
        )
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


def _doc(summary: str, id_argument: str, spec: StatsSpec) -> str:
    """The operator's docstring; the statistic names come from the contract."""
    return f"""{summary}

    :param {id_argument}: the {spec.subject}. Templated.
    :param name: one of {", ".join(spec.names)}. Templated.
    :param date_from: first day (a date, datetime or ISO string such as ``{{{{ ds }}}}``). Templated.
    :param date_to: last day, included. Templated.
    :param search: only values containing this text. Templated.
    :param sort_by: "count" (default) or "value". Templated.
    :param sort: "desc" (default) or "asc". Templated.
    :param max_items: stop after this many rows (default: all).
    :param output_path: write the rows to this CSV file and return its path. Templated.
    """


class LinkstatsLinkStatsOperator(LinksServiceMixin, LinkstatsStatsOperatorBase):
    __doc__ = _doc(
        "Clicks of a short link per country, platform, referrer, ... between two dates.",
        "link_id",
        LINK_STATS,
    )

    template_fields: Sequence[str] = ("link_id", *STATS_TEMPLATE_FIELDS)
    stats = LINK_STATS
    id_argument = "link_id"

    def __init__(
        self, *, link_id: int | str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.link_id = link_id


class LinkstatsWebsiteStatsOperator(AnalyticsServiceMixin, LinkstatsStatsOperatorBase):
    __doc__ = _doc(
        "A tracked website's visitors, pageviews, referrers, countries, ... between two dates.",
        "website_id",
        WEBSITE_STATS,
    )

    template_fields: Sequence[str] = ("website_id", *STATS_TEMPLATE_FIELDS)
    stats = WEBSITE_STATS
    id_argument = "website_id"

    def __init__(
        self, *, website_id: int | str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.website_id = website_id
