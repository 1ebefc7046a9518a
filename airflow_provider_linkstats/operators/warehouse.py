"""Statistics into a warehouse: every service day's clicks per link, or visitors and pageviews per
website (optionally a breakdown: country, referrer, device, ...), into a SQL table of any
database common-sql connects to, or into one file per day on object storage.

The days a run loads and the links that need a request are ``client.warehouse``'s plan (the day
rule, the counters); the rows go through ``sinks``. The rows never enter XCom: the task returns
counts. Nothing heavy is imported here (the scheduler parses this module).
"""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_linkstats.client.contract import LINK_STATS, WEBSITE_STATS, StatsSpec
from airflow_provider_linkstats.operators.base import (
    AnalyticsServiceMixin,
    Argument,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fails_fast,
)

__all__ = ["LinkstatsLinkStatsToWarehouseOperator", "LinkstatsWebsiteStatsToWarehouseOperator"]

PROGRESS_EVERY = 30.0  # seconds between progress lines of a long load


class LinkstatsStatsToWarehouseOperatorBase(LinkstatsBaseOperator):
    """Load the days of this run's data interval (in the zone the service counts them in) into a
    table (``sql_conn_id`` + ``table``) or into files (``path``), each day replaced whole."""

    stats: StatsSpec
    series_columns: tuple[str, ...]  # the daily table's count columns, one per daily statistic
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

    # -- checks before any request -----------------------------------------------------------

    def _sink(self, schema: Any) -> Any:
        from airflow_provider_linkstats.client.checks import is_blank
        from airflow_provider_linkstats.client.errors import LinkstatsInputError
        from airflow_provider_linkstats.sinks import FileSink, SqlSink, check_table

        to_sql, to_files = not is_blank(self.sql_conn_id) or not is_blank(self.table), not is_blank(self.path)
        if to_sql == to_files:
            raise LinkstatsInputError(
                "sql_conn_id/table/path", (self.sql_conn_id, self.table, self.path),
                "either sql_conn_id and table (a SQL table) or path (files on object storage)",
            )  # fmt: skip
        if to_files:
            return FileSink(self.path, str(self.file_format).strip().lower(), schema, self.storage_conn_id or None)
        check_table(self.table)
        if is_blank(self.sql_conn_id):
            raise LinkstatsInputError("sql_conn_id", self.sql_conn_id, "the id of a SQL connection")
        return SqlSink(str(self.sql_conn_id), str(self.table), schema)

    def _interval(self, context: Any) -> tuple[Any, Any]:
        from airflow_provider_linkstats.client.checks import is_blank
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        start = (
            self.data_interval_start if not is_blank(self.data_interval_start) else context.get("data_interval_start")
        )
        end = self.data_interval_end if not is_blank(self.data_interval_end) else context.get("data_interval_end")
        if start is None or end is None:
            raise LinkstatsInputError(
                "data_interval_start/data_interval_end", (start, end),
                "a run with a data interval (a scheduled or backfilled run), or both arguments given",
            )  # fmt: skip
        return start, end

    def _breakdown(self) -> str | None:
        from airflow_provider_linkstats.client.checks import is_blank
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        if is_blank(self.breakdown):
            return None
        name = str(self.breakdown).strip()
        if name not in self.stats.names:
            raise LinkstatsInputError("breakdown", self.breakdown, "one of " + ", ".join(self.stats.names))
        return name

    def _ids(self) -> list[int] | None:
        from airflow_provider_linkstats.client.validation import split_list
        from airflow_provider_linkstats.operators.base import _literal, id_of

        given = getattr(self, self.ids_argument)
        if given is None:
            return None
        if isinstance(given, str):
            listed = _literal(given) if given.strip().startswith("[") else None
            given = listed if isinstance(listed, list) else split_list(given)
        return list(dict.fromkeys(id_of(value, self.ids_argument) for value in given))

    # -- the run -------------------------------------------------------------------------------

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        import datetime as dt

        from airflow_provider_linkstats.client.errors import LinkstatsInputError
        from airflow_provider_linkstats.client.generations import ACCOUNT_OFFSET, ACCOUNT_ZONE
        from airflow_provider_linkstats.client.warehouse import aware, bucketing_zone, plan_days, selection_key

        breakdown = self._breakdown()
        schema = self.schema_for(breakdown)
        start, end = self._interval(context)
        now = dt.datetime.now(dt.timezone.utc)
        end_moment = aware(end, "data_interval_end")
        aware(start, "data_interval_start")
        if end_moment - dt.timedelta(hours=26) > now:  # whatever the zone, its last day has not begun
            raise LinkstatsInputError(
                "data_interval_end", end_moment.isoformat(),
                f"an interval whose days have begun (it is {now:%Y-%m-%d %H:%M} UTC now): a day in the future has "
                "no statistics yet",
            )  # fmt: skip
        ids = self._ids()
        filters = self.selection()
        sink = self._sink(schema)  # a bad table name or a missing connection fails here, before any request
        self.log.info("loading into %s", sink.describe())
        hook = self.hook
        generation = hook.generation
        account_zone = hook.settings.timezone
        if account_zone is None and generation.stats_zone in (ACCOUNT_ZONE, ACCOUNT_OFFSET):
            account_zone = hook.service_profile(account=True).timezone
        zone = bucketing_zone(generation, account_zone, self._service_now(now))
        statistic = breakdown or "+".join(generation.daily_series)
        # The state (incomplete days, counters) is this selection's: another space's load into the
        # same table neither completes its days nor lends it counters.
        sink.selection = selection_key(hook.linkstats_conn_id, filters, ids)
        sink.generation = generation.name
        sink.create_tables()
        reload = sink.incomplete_days(statistic, zone)
        self._plan_args = (start, end, zone, reload)
        plan = plan_days(start, end, zone, self._service_now(now), reload)
        if not plan.days:
            self.log.info("no day of %s ends in this interval (%s to %s): nothing to load", zone, start, end)
            return {"days": [], "zone": zone, "rows": 0, "requests": 0, "minimum_requests": 0}
        self.log.info(
            "%s counts days in %s: loading %s%s", generation.label, zone, ", ".join(map(str, plan.dates)),
            f" ({', '.join(map(str, sorted(plan.incomplete)))} not over yet: reloaded by a later run)"
            if plan.incomplete else "",
        )  # fmt: skip
        result = self.load(plan, sink, generation, statistic, breakdown, ids, filters)
        self.log.info(
            "loaded %d rows for %d days into %s: %d requests (the minimum: %d)",
            result["rows"], len(plan.days), sink.describe(), result["requests"], result["minimum_requests"],
        )  # fmt: skip
        self.lineage_output = sink.lineage_dataset()
        asset = self._asset_uri(sink.asset_uri())
        return {"days": [d.isoformat() for d in plan.dates], "zone": zone, "asset": asset, **result}

    def replan(self, plan: Any, service_now: Any) -> Any:
        """The plan again by the service's clock, once a request has taught it."""
        from airflow_provider_linkstats.client.warehouse import plan_days

        start, end, zone, reload = self._plan_args
        return plan_days(start, end, zone, service_now, reload)

    def _service_now(self, worker_now: Any) -> Any:
        """The service's clock (learned from its Date header), where the client has one; else the worker's."""
        clock = getattr(self.hook.client, "clock", None)
        now = getattr(clock, "now", None)
        try:
            return now() if callable(now) else worker_now
        except Exception:  # a clock that learned nothing yet
            return worker_now

    def _asset_uri(self, uri: str) -> str:
        """``uri`` as Airflow normalises an Asset's (``sqlite:///path`` becomes ``sqlite:/path``); a note
        in the log when no declared outlet is this table, so that no downstream DAG waits on it in vain."""
        from airflow.providers.common.compat.sdk import Asset

        try:
            uri = Asset(uri).uri
        except (ValueError, TypeError):
            pass
        if uri not in [getattr(outlet, "uri", None) for outlet in (self.outlets or [])]:
            self.log.info("declare outlets=[Asset(%r)] to schedule downstream DAGs on this table", uri)
        return uri

    def load(self, plan: Any, sink: Any, generation: Any, statistic: str, breakdown: str | None,
             ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        raise NotImplementedError

    def schema_for(self, breakdown: str | None) -> Any:
        raise NotImplementedError

    def selection(self) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import is_blank

        names = ["search", *(argument.name for argument in self.selection_arguments())]
        return {name: getattr(self, name) for name in names if not is_blank(getattr(self, name))}

    # -- OpenLineage: the table or the files are the output ----------------------------------------

    lineage_output: tuple[str, str] | None = None  # (namespace, name), set by execute()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        from airflow_provider_linkstats.lineage import openlineage_classes

        classes = openlineage_classes()
        if classes is None or not self.lineage_output:
            return None
        operator_lineage, dataset = classes
        namespace, name = self.lineage_output
        return operator_lineage(outputs=[dataset(namespace=namespace, name=name)])


class Progress:
    """A log line every ``PROGRESS_EVERY`` seconds: done, left, the rate and the time left, from the
    project's sliding-window progress (``streaming.Progress``), capped by the hook's rate limiter."""

    def __init__(self, log: Any, total: int, what: str, limiter: Any = None) -> None:
        from airflow_provider_linkstats.streaming import Progress as Window

        self.log, self.total, self.what = log, total, what
        self.window = Window(limiter=limiter)
        self.last = time.monotonic()

    def step(self, done: int) -> None:
        from airflow_provider_linkstats.streaming import duration

        self.window.update(done)
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY or done >= self.total:
            return
        self.last = now
        left = self.window.seconds_left(self.total - done)
        after = f", about {duration(left)} left" if left is not None else ""
        self.log.info("%d of %d %s (%.1f/s%s)", done, self.total, self.what, self.window.rate, after)


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

    def schema_for(self, breakdown: str | None) -> Any:
        from airflow_provider_linkstats.sinks import LINK_BREAKDOWN, LINK_DAILY

        return LINK_BREAKDOWN if breakdown else LINK_DAILY

    def load(self, plan: Any, sink: Any, generation: Any, statistic: str, breakdown: str | None,
             ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        import datetime as dt

        from airflow_provider_linkstats.client.warehouse import (
            Counter,
            Listed,
            daily_counts,
            links_to_fetch,
            listing_pages,
            minimum_requests,
            steady_since,
        )

        hook, series = self.hook, generation.daily_series[0]
        known = sink.counters(statistic)
        began = time.time()
        if ids is None:
            listed = {int(link["id"]): Listed.of(link) for link in hook.iter_links(**filters)}
            pages = listing_pages(len(listed))
        else:
            listed, pages = {i: Listed(None) for i in ids}, 0
        # The service's moment the listing began (its Date header's clock, less the time the pages
        # took and the header's second): a counter read then held its value at least from there.
        now = self._service_now(dt.datetime.now(dt.timezone.utc))
        listed_at = now - dt.timedelta(seconds=time.time() - began + 1)
        plan = self.replan(plan, now)
        windows = plan.windows()
        reasons = links_to_fetch(listed, known, plan)
        wanted = list(reasons)
        self.log.info(
            "%d links listed, %d with new clicks to fetch (%d unchanged)", len(listed), len(wanted),
            len(listed) - len(wanted),
        )  # fmt: skip
        if ids is None and not known:
            self.log.info("no counters saved for this selection yet: every link listed is fetched (a counter of 0 "
                          "may be a reset); later runs fetch only the links whose counter moved")  # fmt: skip
        unusual = {i: why for i, why in reasons.items() if why.startswith(("counter went down", "re-created"))}
        if unusual:
            shown = ", ".join(f"link {i}: {why}" for i, why in list(unusual.items())[:10])
            self.log.warning("%d links fetched whatever their counter: %s", len(unusual), shown)
        counts: dict[int, dict[dt.date, int]] = {}
        learned: dict[int, Counter] = {}
        requests = 0
        progress = Progress(self.log, len(wanted), "links fetched", getattr(hook.client, "limiter", None))
        for done, link_id in enumerate(wanted):
            per_day: dict[dt.date, int] = {}
            for first, to in windows:  # a click is in one window's answer, whatever day it is named
                for day, count in daily_counts(hook.iter_stats(link_id, series, first, to)).items():
                    per_day[day] = per_day.get(day, 0) + count
                requests += 1
            counts[link_id] = per_day
            link = listed[link_id]
            if link.clicks is not None:
                learned[link_id] = Counter(link.clicks, steady_since(listed_at, per_day, windows, plan), link.alias)
            progress.step(done + 1)
        days_with_clicks = 0
        rows_by_day: dict[dt.date, list[tuple]] = {day.day: [] for day in plan.days}
        for link_id, per_day in counts.items():
            for day in rows_by_day:
                if not per_day.get(day):
                    continue
                if breakdown is None:
                    rows_by_day[day].append((link_id, day.isoformat(), plan.zone, per_day[day]))
                    continue
                days_with_clicks += 1
                for row in hook.iter_stats(link_id, breakdown, day, day):
                    value = "" if row.get("value") is None else str(row["value"])
                    rows_by_day[day].append((link_id, day.isoformat(), plan.zone, breakdown, value, int(row["count"])))
                requests += 1
        return self.write(plan, sink, statistic, list(listed), rows_by_day, learned) | {
            "links": len(listed),
            "fetched": len(wanted),
            "requests": requests + pages,
            "minimum_requests": minimum_requests(
                listed=len(listed) if ids is None else 0, changed=len(wanted), windows=len(windows),
                breakdown_days=days_with_clicks,
            ),
        }  # fmt: skip

    def write(self, plan: Any, sink: Any, statistic: str, record_ids: list[int], rows_by_day: dict,
              learned: dict) -> dict[str, Any]:  # fmt: skip
        rows = 0
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            sink.write_day(day.day, plan.zone, statistic, record_ids, day_rows, day.day not in plan.incomplete)
            rows += len(day_rows)
        if learned:
            sink.save_counters(statistic, learned)  # after the rows: a kill before it costs requests, never rows
        return {"rows": rows}


class LinkstatsWebsiteStatsToWarehouseOperator(AnalyticsServiceMixin, LinkstatsStatsToWarehouseOperatorBase):
    """Visitors and pageviews per website and day (or a breakdown per website and day) into a
    warehouse, each day once, in the zone the service counts them in (UTC).

    Per run: the listing's pages, then one request per website and statistic (a breakdown: one
    per website and day). Rows: ``website_id, day, zone, visitors, pageviews`` (a breakdown:
    ``website_id, day, zone, statistic, value, count``). Returns counts, never rows.
    """

    stats = WEBSITE_STATS

    def schema_for(self, breakdown: str | None) -> Any:
        from airflow_provider_linkstats.sinks import WEBSITE_BREAKDOWN, WEBSITE_DAILY

        return WEBSITE_BREAKDOWN if breakdown else WEBSITE_DAILY

    def load(self, plan: Any, sink: Any, generation: Any, statistic: str, breakdown: str | None,
             ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        import datetime as dt

        from airflow_provider_linkstats.client.warehouse import daily_counts, listing_pages

        hook = self.hook
        if ids is None:
            ids = [int(website["id"]) for website in hook.iter_websites(**filters)]
            pages = listing_pages(len(ids))
        else:
            pages = 0
        windows = [(d.day, d.day) for d in plan.days] if breakdown else plan.windows()
        names = (breakdown,) if breakdown else generation.daily_series
        rows_by_day: dict[dt.date, list[tuple]] = {day.day: [] for day in plan.days}
        requests = 0
        progress = Progress(self.log, len(ids), "websites fetched", getattr(hook.client, "limiter", None))
        for done, website_id in enumerate(ids):
            if breakdown:
                for day in plan.days:
                    for row in hook.iter_stats(website_id, breakdown, day.day, day.day):
                        value = "" if row.get("value") is None else str(row["value"])
                        rows_by_day[day.day].append(
                            (website_id, day.day.isoformat(), plan.zone, breakdown, value, int(row["count"]))
                        )
                    requests += 1
            else:
                series = {}
                for name in names:
                    per_day: dict[dt.date, int] = {}
                    for first, to in windows:
                        per_day.update(daily_counts(hook.iter_stats(website_id, name, first, to)))
                        requests += 1
                    series[name] = per_day
                for day in rows_by_day:
                    values = [series[name].get(day, 0) for name in names]
                    if any(values):
                        rows_by_day[day].append((website_id, day.isoformat(), plan.zone, *values))
            progress.step(done + 1)
        rows = 0
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            sink.write_day(day.day, plan.zone, statistic, ids, day_rows, day.day not in plan.incomplete)
            rows += len(day_rows)
        return {
            "websites": len(ids),
            "rows": rows,
            "requests": requests + pages,
            "minimum_requests": pages
            + (len(ids) * len(plan.days) if breakdown else len(ids) * len(names) * len(windows)),
        }


def _merged(rows: list[tuple], key_size: int) -> list[tuple]:
    """Rows with one row per natural key: a breakdown's values that differ only in ways the key
    does not (None and "" both stored as "") are summed."""
    merged: dict[tuple, list] = {}
    for row in rows:
        key = tuple(row[:2]) + tuple(row[3 : 3 + key_size - 2]) if key_size > 2 else tuple(row[:2])
        if key in merged:
            merged[key][-1] += row[-1]
        else:
            merged[key] = list(row)
    return [tuple(row) for row in merged.values()]
