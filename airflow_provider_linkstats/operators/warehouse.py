"""Statistics into a warehouse: every service day's clicks per link, or visitors and pageviews per
website (optionally a breakdown: country, referrer, device, ...), into a SQL table of any
database common-sql connects to, or into one file per day on object storage.

The plan is ``client.warehouse``'s, the requests and writes ``drivers.warehouse``'s. The rows never
enter XCom: the task returns counts. Nothing heavy is imported here (the scheduler parses this module).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.contract import LINK_STATS, WEBSITE_STATS, StatsSpec
from airflow_provider_linkstats.operators.base import (
    AnalyticsServiceMixin,
    Argument,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fails_fast,
)
from airflow_provider_linkstats.operators.lineage import LinkstatsLineageMixin

__all__ = ["LinkstatsLinkStatsToWarehouseOperator", "LinkstatsWebsiteStatsToWarehouseOperator"]


class LinkstatsStatsToWarehouseOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Load the days of this run's data interval (in the zone the service counts them in) into a
    table (``sql_conn_id`` + ``table``) or into files (``path``), each day replaced whole."""

    stats: StatsSpec
    load_class: str  # the driver's class in drivers.warehouse
    ui_color = "#e3f1e5"

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        noun = cls.resource.singular
        return (
            Argument("sql_conn_id", "a SQL connection (any common-sql database) to load into.", annotation="str"),
            Argument("table", "the table of that connection (``name`` or ``schema.name``); created if missing.",
                     annotation="str"),
            Argument("path", "instead of a table: a directory on object storage (``s3://bucket/dir``, a local "
                     "path), one file per day and selection: ``<YYYY-MM-DD>/<selection>.<file_format>``.",
                     annotation="str"),
            Argument("file_format", "csv, jsonl or parquet (parquet needs pyarrow).", "jsonl", "str"),
            Argument("storage_conn_id", "the connection of ``path``'s object storage, if it needs one.",
                     annotation="str"),
            Argument("breakdown", f"load this statistic per {noun} and day (country, referrer, device, ...) "
                     "instead of the daily counts.", annotation="str"),
            cls.record_argument(f"only these {cls.resource.name} (default: every one the filters list)", many=True),
            Argument("search", f"only {cls.resource.name} whose listing search matches this text.", annotation="str"),
            *cls.selection_arguments(),
            Argument("data_interval_start", "the interval's start (default: the run's).", annotation="datetime | str"),
            Argument("data_interval_end", "the interval's end (default: the run's).", annotation="datetime | str"),
        )  # fmt: skip

    @classmethod
    def selection_arguments(cls) -> tuple[Argument, ...]:
        return ()

    def _ids(self) -> list[int] | None:
        from airflow_provider_linkstats.operators.base import id_of, rendered_list

        given = getattr(self, self.ids_argument)
        if given is None:
            return None
        return list(dict.fromkeys(id_of(value, self.ids_argument) for value in rendered_list(given)))

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        import datetime as dt

        from airflow_provider_linkstats.client.warehouse import check_days_begun, checked_breakdown, run_interval

        breakdown = checked_breakdown(self.breakdown, self.stats.names)
        schema = self.driver_class().schema_for(breakdown)
        start, end = run_interval(self.data_interval_start, self.data_interval_end, context, self.log)
        now = dt.datetime.now(dt.timezone.utc)
        check_days_begun(start, end, now)
        ids = self._ids()
        filters = self.selection()
        from airflow_provider_linkstats.drivers.sinks import sink_for

        # a bad table name or a missing connection fails here, before any request
        sink = sink_for(self.sql_conn_id, self.table, self.path, self.file_format, self.storage_conn_id, schema)
        self.log.info("loading into %s", sink.describe())
        load = self.driver_class()(self.hook, self.log)
        result = load.run(sink, start, end, now, breakdown, ids, filters)
        if not load.loaded:
            return result
        self.lineage_output = sink.lineage_dataset()
        asset = self._asset_uri(sink.asset_uri())
        return {"days": result["days"], "zone": result["zone"], "asset": asset, **result}

    def _asset_uri(self, uri: str) -> str:
        """``uri`` as Airflow normalises an Asset's, noted in the log when no declared outlet is this table
        (no downstream DAG waits on it in vain)."""
        from airflow.providers.common.compat.sdk import Asset

        try:
            uri = Asset(uri).uri
        except (ValueError, TypeError):
            pass
        if uri not in [getattr(outlet, "uri", None) for outlet in (self.outlets or [])]:
            self.log.info("declare outlets=[Asset(%r)] to schedule downstream DAGs on this table", uri)
        return uri

    def driver_class(self) -> Any:
        from airflow_provider_linkstats.drivers import warehouse

        return getattr(warehouse, self.load_class)

    def selection(self) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import is_blank

        names = ["search", *(argument.name for argument in self.selection_arguments())]
        return {name: getattr(self, name) for name in names if not is_blank(getattr(self, name))}

    lineage_output: tuple[str, str] | None = None  # (namespace, name) of the table or files, set by execute()

    def lineage_outputs(self) -> list[tuple[str, str]]:
        return [self.lineage_output] if self.lineage_output else []


class LinkstatsLinkStatsToWarehouseOperator(LinksServiceMixin, LinkstatsStatsToWarehouseOperatorBase):
    """Clicks per link and day (or a breakdown per link and day) into a warehouse, each day once.

    Per run: the listing's pages (100 links a page), then one request per link whose ``clicks``
    counter moved since it was last loaded, went down or restarted (a breakdown: plus one per link
    and day with clicks); every link on the first run of a selection (a new table, a new filter).
    Rows: ``link_id, day, zone, clicks`` (a breakdown: ``link_id, day, zone, statistic, value,
    clicks``), only for links with clicks that day. Returns counts, never rows.
    """

    stats = LINK_STATS

    @classmethod
    def selection_arguments(cls) -> tuple[Argument, ...]:
        return (
            Argument("space_id", "only links of this space (0: links without a space).", annotation="int"),
            Argument("domain_id", "only links of this domain.", annotation="int"),
        )

    load_class = "LinkStatsLoad"


class LinkstatsWebsiteStatsToWarehouseOperator(AnalyticsServiceMixin, LinkstatsStatsToWarehouseOperatorBase):
    """Visitors and pageviews per website and day (or a breakdown per website and day) into a
    warehouse, each day once, in the zone the service counts them in (UTC).

    Per run: the listing's pages, then one request per website and statistic (a breakdown: one
    per website and day). Rows: ``website_id, day, zone, visitors, pageviews`` (a breakdown:
    ``website_id, day, zone, statistic, value, count``). Returns counts, never rows.
    """

    stats = WEBSITE_STATS

    load_class = "WebsiteStatsLoad"
