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
        run_after = getattr(context.get("dag_run"), "run_after", None)
        if start is None and end is None and run_after is not None:
            # Airflow 3's manual trigger without a logical date (the UI's button, `airflow dags trigger`):
            # no data interval. Taken as an empty interval at the moment the run was due, so the run
            # loads the day that ended last before it (execute() says which, and why).
            self.log.info("this run has no data interval (a manual trigger without a logical date): it is "
                          "taken as the moment the run was due, %s", run_after)  # fmt: skip
            return run_after, run_after
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
        from airflow_provider_linkstats.client.warehouse import (
            aware,
            bucketing_zone,
            label_offset,
            plan_days,
            selection_key,
        )

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
        self._plan_args = (start, end, zone, reload, generation)
        service_now = self._service_now(now)
        plan = plan_days(start, end, zone, service_now, reload, label_offset(generation, zone, service_now))
        if aware(start, "data_interval_start") == end_moment:
            self.log.info(
                "the data interval is empty (%s: a trigger timetable, such as Airflow 3's schedule=\"@daily\", or a "
                "manual run), so this run loads the day of %s that ended last before it: %s. For days that follow "
                "the logical dates, schedule with data intervals: schedule=CronDataIntervalTimetable(\"0 0 * * *\", "
                "timezone=%r) (from airflow.timetables.interval), which loads the day of each logical date",
                end_moment.isoformat(), zone, ", ".join(map(str, plan.dates)) or "none", account_zone or zone,
            )  # fmt: skip
        if not plan.days:
            self.log.info("no day of %s ends in this interval (%s to %s): nothing to load", zone, start, end)
            return {"days": [], "zone": zone, "rows": 0, "requests": 0, "minimum_requests": 0}
        self.log.info(
            "%s counts days in %s: loading %s%s", generation.label, zone, ", ".join(map(str, plan.dates)),
            f" ({', '.join(map(str, sorted(plan.incomplete)))} not over yet: reloaded by a later run)"
            if plan.incomplete else "",
        )  # fmt: skip
        result = self.load(plan, sink, generation, statistic, breakdown, ids, filters)
        from airflow_provider_linkstats.streaming import counted

        self.log.info(
            "loaded %s for %s into %s: %d requests (the minimum: %d)", counted(result["rows"], "row"),
            counted(len(plan.days), "day"), sink.describe(), result["requests"], result["minimum_requests"],
        )  # fmt: skip
        self.lineage_output = sink.lineage_dataset()
        asset = self._asset_uri(sink.asset_uri())
        return {"days": [d.isoformat() for d in plan.dates], "zone": zone, "asset": asset, **result}

    def replan(self, plan: Any, service_now: Any, read_after: Any = None) -> Any:
        """The plan again by the service's clock, once a request has taught it; a day is complete
        only if it ended by ``read_after`` (every answer the load uses was read after it)."""
        from airflow_provider_linkstats.client.warehouse import label_offset, plan_days

        start, end, zone, reload, generation = self._plan_args
        labels = label_offset(generation, zone, service_now)
        return plan_days(start, end, zone, service_now, reload, labels, complete_by=read_after)

    def _read_after(self, worker_moment: float, listing: Any = None) -> Any:
        """The service's moment before which no answer this load uses was read, less the clock's
        margin, so that an answer read before a day ended never makes the day complete.

        The first answer is the earliest (everything else is asked after it): with a listing, its
        first page's own ``Date`` less the round trip (``GaplessListing.read_from``); without one,
        ``worker_moment`` (the worker's epoch seconds, noted before the first request) on the
        service's clock."""
        import datetime as dt

        from airflow_provider_linkstats.client.clock import SAFETY_MARGIN

        margin = dt.timedelta(seconds=SAFETY_MARGIN)
        read_from = getattr(listing, "read_from", None)
        if read_from is not None:
            return read_from - margin
        clock = getattr(self.hook.client, "clock", None)
        if clock is None or not getattr(clock, "known", False):
            return dt.datetime.fromtimestamp(worker_moment, dt.timezone.utc) - margin
        return dt.datetime.fromtimestamp(worker_moment + clock.offset - clock.margin, dt.timezone.utc)

    def _clock_known(self) -> bool:
        return bool(getattr(getattr(self.hook.client, "clock", None), "known", False))

    def _watch_reads(self) -> None:
        """The client's clock notes from here the earliest moment an answer was read (``_settle``)."""
        watch = getattr(getattr(self.hook.client, "clock", None), "watch_reads", None)
        if callable(watch):
            watch()

    def _settle(self, plan: Any, began: float, listing: Any, clock_known: bool) -> Any:
        """The days' completeness again once every answer is in, from the earliest moment the
        service may have read one: the moment the first request left (``began``) on its clock as
        known now, and the earliest ``Date`` of any answer less its round trip (``watch_reads``),
        if earlier than the plan's. Without a listing (ids given) the plan
        was made before any answer, on the worker's clock (a worker ahead made complete a day the
        service had not ended when it answered); and a service clock stepped back during the load
        answered its later requests before the moment the first answer showed."""
        import dataclasses
        import datetime as dt

        from airflow_provider_linkstats.client.clock import SAFETY_MARGIN
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        if not self._clock_known():
            return plan
        read_after = self._read_after(began)
        if listing is not None or clock_known:
            read_after = min(read_after, self._read_after(began, listing))
        reads_from = getattr(getattr(self.hook.client, "clock", None), "reads_from", None)
        if isinstance(reads_from, (int, float)):  # every answer's own Date, a stepped or cached one too
            read_after = min(read_after, dt.datetime.fromtimestamp(reads_from - SAFETY_MARGIN, dt.timezone.utc))
        try:
            return self.replan(plan, self._service_now(dt.datetime.now(dt.timezone.utc)), read_after)
        except LinkstatsInputError:  # a day not begun by the service's clock: none of them is complete
            return dataclasses.replace(plan, incomplete=frozenset(plan.dates))

    def _confirm_gone(self, record_id: int, error: Exception) -> int:
        """A statistics 404 counts as the record deleted only if the record itself answers 404 too
        (not a route or a proxy that answers 404 for statistics): else ``error`` is raised. Returns
        the requests made (1)."""
        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError

        try:
            self.hook.get_record(record_id)
        except LinkstatsNotFoundError:
            return 1
        raise error

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
        from airflow_provider_linkstats.operators.lineage import openlineage_classes

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

        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError
        from airflow_provider_linkstats.client.warehouse import (
            Counter,
            Listed,
            daily_counts,
            first_day_found_short,
            links_to_fetch,
            minimum_requests,
            steady_since,
        )

        hook, series = self.hook, generation.daily_series[0]
        known = sink.counters(statistic)
        began = time.time()  # before the first request whose answer this load uses
        self._watch_reads()
        if ids is None:
            listing = hook.iter_records(filters, complete=True)  # skips no link, however the listing moves
            listed = {int(link["id"]): Listed.of(link) for link in listing}
            pages = listing.pages
        else:
            listed, pages, listing = {i: Listed(None) for i in ids}, 0, None
        # The service's moment the listing began (its Date header's clock, less the time the pages
        # took and the header's second): a counter read then held its value at least from there.
        now = self._service_now(dt.datetime.now(dt.timezone.utc))
        listed_at = now - dt.timedelta(seconds=time.time() - began + 1)
        clock_known = self._clock_known()
        plan = self.replan(plan, now, self._read_after(began, listing))
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
        counts: dict[int, dict[dt.date, int | None]] = {}
        learned: dict[int, Counter] = {}
        gone: list[int] = []  # deleted between the listing and their statistics: their rows stay as they were
        requests = asked_alone = 0
        short: list[dt.date] = []  # per link whose counter grew by more than its answer holds: the first day short
        progress = Progress(self.log, len(wanted), "links fetched", getattr(hook.client, "limiter", None))
        for done, link_id in enumerate(wanted):
            labelled: dict[dt.date, int] = {}
            alone: dict[dt.date, int | None] = {}
            try:
                for first, to in windows:  # a click is in one window's answer, whatever day it is labelled
                    requests += 1
                    for day, count in plan.counts((first, to), hook.iter_stats(link_id, series, first, to)).items():
                        labelled[day] = labelled.get(day, 0) + count
                # Days the labels do not match (a DST change since): asked alone, the service's selection
                # is then exactly the day (a breakdown asks its own request of the day instead).
                alone = {day: None for day in plan.ask_alone(labelled, windows)}
                if breakdown is None:
                    for day in alone:
                        requests += 1
                        asked_alone += 1
                        alone[day] = sum(daily_counts(hook.iter_stats(link_id, series, day, day)).values())
            except LinkstatsNotFoundError as error:
                requests += self._confirm_gone(link_id, error)
                gone.append(link_id)
                progress.step(done + 1)
                continue
            counts[link_id] = plan.day_counts(labelled, windows, alone)
            link = listed[link_id]
            if link.clicks is not None:
                learned[link_id] = Counter(
                    link.clicks, steady_since(listed_at, labelled, windows, plan, counts[link_id]), link.alias
                )
                found = first_day_found_short(link.clicks, known.get(link_id), sum(labelled.values()), windows, plan)
                short += [found] if found else []
            progress.step(done + 1)
        plan = self._settle(plan, began, listing, clock_known)
        if short and not getattr(self, "_reloaded_short", False):  # once a run: the second pass starts earlier
            return self._reload_short(plan, now, min(short), len(short), requests + pages, sink, generation,
                                      statistic, breakdown, ids, filters)  # fmt: skip
        days_with_clicks = 0
        rows_by_day: dict[dt.date, list[tuple]] = {day.day: [] for day in plan.days}
        for link_id, per_day in counts.items():
            for day in rows_by_day:
                if per_day.get(day) == 0:  # None: a day asked alone, by its breakdown
                    continue
                if breakdown is None:
                    rows_by_day[day].append((link_id, day.isoformat(), plan.zone, per_day[day]))
                    continue
                days_with_clicks += 1
                if link_id in gone:
                    continue
                try:
                    found, day_pages = breakdown_of(hook, link_id, breakdown, day)
                except LinkstatsNotFoundError as error:
                    requests += 1 + self._confirm_gone(link_id, error)
                    gone.append(link_id)
                    continue
                requests += day_pages
                rows_by_day[day].extend(
                    (link_id, day.isoformat(), plan.zone, breakdown, value, count) for value, count in found
                )
        if gone:
            gone_set = set(gone)
            for day, day_rows in rows_by_day.items():
                rows_by_day[day] = [row for row in day_rows if row[0] not in gone_set]
            learned = {i: c for i, c in learned.items() if i not in gone_set}
            shown = ", ".join(map(str, gone[:20])) + (f" and {len(gone) - 20} more" if len(gone) > 20 else "")
            self.log.warning(
                "%d links were deleted after the listing read them (their statistics answered 404): %s; their rows "
                "already in %s are left as they were", len(gone), shown, sink.describe(),
            )  # fmt: skip
        record_ids = [i for i in listed if i not in set(gone)]
        return self.write(plan, sink, statistic, record_ids, rows_by_day, learned) | {
            "links": len(listed),
            "gone": gone,
            "fetched": len(wanted),
            "requests": requests + pages,
            "minimum_requests": minimum_requests(
                listed=len(listed) if ids is None else None, changed=len(wanted), windows=len(windows),
                breakdown_days=days_with_clicks, alone=asked_alone,
            ),
        }  # fmt: skip

    def _reload_short(self, plan: Any, now: Any, earliest: Any, links: int, spent: int, *load: Any) -> dict[str, Any]:
        """The load again, from ``earliest``: days an earlier run loaded (and may have marked complete)
        before clicks on them were counted, found by links whose counters grew by more than the
        answers from this run's first day hold. Nothing was written yet; the requests ``spent`` on
        finding it are added to this run's."""
        import datetime as dt

        start, end, zone, reload, generation = self._plan_args
        first = plan.days[0].day
        extra = {earliest + dt.timedelta(days=n) for n in range((first - earliest).days)}
        self.log.info(
            "%d links counted more clicks since they were last read than their answers from %s hold: the days "
            "from %s were loaded before those clicks came, and are loaded again by this run", links, first, earliest,
        )  # fmt: skip
        self._plan_args = (start, end, zone, sorted(set(reload) | extra), generation)
        self._reloaded_short = True
        replanned = self.replan(plan, now)
        result = self.load(replanned, *load)
        result["requests"] += spent
        result["minimum_requests"] += spent  # the first pass is what found the days short
        return result | {"days": [day.isoformat() for day in replanned.dates]}

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

        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError
        from airflow_provider_linkstats.client.warehouse import daily_counts

        hook = self.hook
        began = time.time()  # before the first request whose answer this load uses
        self._watch_reads()
        if ids is None:
            listing = hook.iter_records(filters, complete=True)  # skips no website, however the listing moves
            ids = [int(website["id"]) for website in listing]
            pages = listing.pages
        else:
            pages, listing = 0, None
        clock_known = self._clock_known()
        plan = self.replan(plan, self._service_now(dt.datetime.now(dt.timezone.utc)), self._read_after(began, listing))
        windows = [(d.day, d.day) for d in plan.days] if breakdown else plan.windows()
        names = (breakdown,) if breakdown else generation.daily_series
        rows_by_day: dict[dt.date, list[tuple]] = {day.day: [] for day in plan.days}
        requests = breakdown_pages = 0
        progress = Progress(self.log, len(ids), "websites fetched", getattr(hook.client, "limiter", None))
        gone: list[int] = []  # deleted between the listing and their statistics: their rows stay as they were
        for done, website_id in enumerate(ids):
            mine: list[tuple[dt.date, tuple]] = []
            try:
                if breakdown:
                    for day in plan.days:
                        requests += 1  # the first page (a deleted website's 404 is a request too)
                        found, day_pages = breakdown_of(hook, website_id, breakdown, day.day)
                        requests += day_pages - 1
                        breakdown_pages += day_pages
                        for value, count in found:
                            row = (website_id, day.day.isoformat(), plan.zone, breakdown, value, count)
                            mine.append((day.day, row))
                else:
                    series = {}
                    for name in names:
                        per_day: dict[dt.date, int] = {}
                        for first, to in windows:
                            requests += 1
                            per_day.update(daily_counts(hook.iter_stats(website_id, name, first, to)))
                        series[name] = per_day
                    for day in rows_by_day:
                        values = [series[name].get(day, 0) for name in names]
                        if any(values):
                            mine.append((day, (website_id, day.isoformat(), plan.zone, *values)))
            except LinkstatsNotFoundError as error:
                requests += self._confirm_gone(website_id, error)
                gone.append(website_id)
                mine = []
            for day, row in mine:
                rows_by_day[day].append(row)
            progress.step(done + 1)
        plan = self._settle(plan, began, listing, clock_known)
        if gone:
            self.log.warning(
                "%d websites were deleted after the listing read them (their statistics answered 404): %s; their "
                "rows already in %s are left as they were", len(gone), ", ".join(map(str, gone)), sink.describe(),
            )  # fmt: skip
        written = [i for i in ids if i not in set(gone)]
        rows = 0
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            sink.write_day(day.day, plan.zone, statistic, written, day_rows, day.day not in plan.incomplete)
            rows += len(day_rows)
        return {
            "websites": len(ids),
            "gone": gone,
            "rows": rows,
            "requests": requests + pages,
            # a breakdown: a request per website and day, and a page more per 100 values
            "minimum_requests": pages + (breakdown_pages if breakdown else len(ids) * len(names) * len(windows)),
        }


def breakdown_of(hook: Any, record_id: int, name: str, day: Any) -> tuple[list[tuple[str, int]], int]:
    """One day's breakdown of a record: ``(value, count)`` rows (an unknown value as ``""``) and the
    pages it took. Read by value, not by count: the services sort by one column and the database
    leaves ties in any order, so pages by count could repeat a row and drop another; values are
    unique in a breakdown. 100 rows a page, the most the services take."""
    from airflow_provider_linkstats.client.contract import MAX_PER_PAGE
    from airflow_provider_linkstats.client.warehouse import listing_pages

    found = [
        ("" if row.get("value") is None else str(row["value"]), int(float(row.get("count") or 0)))
        for row in hook.iter_stats(record_id, name, day, day, sort_by="value", sort="asc", per_page=MAX_PER_PAGE)
    ]
    return found, listing_pages(len(found), MAX_PER_PAGE)


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
