"""A warehouse load's run as plain stages over one value, ``LoadRun``. ``StatsLoad.run`` plans it; a
driver's ``load`` lists, decides which records to fetch, fetches, and hands the rows to ``write``.
No stage keeps state on the driver: each takes the run and returns what it found."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.drivers.warehouse.notes import say_empty_interval, say_overlapping, say_zone_change
from airflow_provider_linkstats.drivers.warehouse.service import ServiceClock


@dataclass(frozen=True)
class LoadRun:
    """One run of a load: what was asked, what the destination held when it began, and its plan.

    ``reload``: the days loaded again (incomplete before, or found short); ``change``: the zone change
    the days ``held`` in another zone make (complete days, incomplete ones with their zone);
    ``planned_in``: the account's zone the days were planned in, if taken from the account (confirmed
    after the answers); ``spent``: the requests of a pass that found days short."""

    sink: Any
    statistic: str
    breakdown: str | None
    ids: list[int] | None
    filters: dict[str, Any]
    generation: Any
    start: Any
    end: Any
    zone: str
    reload: tuple[dt.date, ...]
    change: Any
    held: tuple[dict, dict]
    planned_in: str | None
    plan: Any
    spent: int = 0
    widened: bool = False

    def replanned(self, service_now: Any, read_after: Any = None) -> LoadRun:
        """The plan again by the service's clock, once a request has taught it; a day is complete
        only if it ended by ``read_after`` (every answer the load uses was read after it)."""
        from airflow_provider_linkstats.client.warehouse import label_offset, plan_days

        labels = label_offset(self.generation, self.zone, service_now)
        plan = plan_days(self.start, self.end, self.zone, service_now, self.reload, labels,
                         complete_by=read_after, change=self.change)  # fmt: skip
        return dataclasses.replace(self, plan=plan)

    def settled(self, clock: ServiceClock, began: float, listing: Any, clock_known: bool) -> LoadRun:
        """The days' completeness again once every answer is in, from the earliest moment the
        service may have read one (``ServiceClock.earliest_read``)."""
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        if not clock.known:
            return self
        try:
            return self.replanned(clock.now(), clock.earliest_read(began, listing, clock_known))
        except LinkstatsInputError:  # a day not begun by the service's clock: none of them is complete
            return dataclasses.replace(self, plan=dataclasses.replace(self.plan, incomplete=frozenset(self.plan.dates)))


class StatsLoad:
    """One load of a selection's statistics into a sink: the plan of the days, the requests, the writes."""

    def __init__(self, hook: Any, log: Any) -> None:
        self.hook, self.log = hook, log
        self.clock = ServiceClock(hook)
        self.loaded = False  # whether a day was loaded (else the result says why not)

    def run(self, sink: Any, start: Any, end: Any, now: Any, breakdown: str | None,
            ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        """The days of ``start`` to ``end`` loaded: the counts the task returns (without the asset)."""
        from airflow_provider_linkstats.client.warehouse import aware
        from airflow_provider_linkstats.drivers.progress import counted

        run = self.planned(sink, start, end, breakdown, ids, filters)
        plan = run.plan
        if aware(start, "data_interval_start") == aware(end, "data_interval_end"):
            say_empty_interval(self.log, aware(end, "data_interval_end"), run.zone, plan,
                               run.planned_in or self.hook.settings.timezone)  # fmt: skip
        if not plan.days:
            if plan.covered:  # said above: within the days loaded in the old zone
                self.log.info("every day of this interval lies within days loaded in another zone: nothing to load")
            else:
                self.log.info("no day of %s ends in this interval (%s to %s): nothing to load", run.zone, start, end)
            return {"days": [], "zone": run.zone, "rows": 0, "requests": 0, "minimum_requests": 0}
        self.log.info(
            "%s counts days in %s: loading %s%s", run.generation.label, run.zone, ", ".join(map(str, plan.dates)),
            f" ({', '.join(map(str, sorted(plan.incomplete)))} not over yet: reloaded by a later run)"
            if plan.incomplete else "",
        )  # fmt: skip
        result = self.load(run)
        self.log.info(
            "loaded %s for %s into %s: %d requests (the minimum: %d)", counted(result["rows"], "row"),
            counted(len(plan.days), "day"), sink.describe(), result["requests"], result["minimum_requests"],
        )  # fmt: skip
        self.loaded = True
        return {"days": [d.isoformat() for d in plan.dates], "zone": run.zone, **result}

    def planned(self, sink: Any, start: Any, end: Any, breakdown: str | None, ids: list[int] | None,
                filters: dict[str, Any]) -> LoadRun:  # fmt: skip
        """The run, planned: the zone the service counts days in, the sink's state of this
        selection (its days incomplete, its days held in other zones), and the days."""
        from airflow_provider_linkstats.client.generations import ACCOUNT_OFFSET, ACCOUNT_ZONE
        from airflow_provider_linkstats.client.warehouse import bucketing_zone, selection_key, zone_change

        hook, generation = self.hook, self.hook.generation
        account_zone, planned_in = hook.settings.timezone, None
        # The account's zone, when the service counts days in it: read by this task or from the
        # host's learned facts (up to their cache_ttl old), so confirmed after the answers.
        if account_zone is None and generation.stats_zone in (ACCOUNT_ZONE, ACCOUNT_OFFSET):
            account_zone = planned_in = hook.service_profile(account=True).timezone
        zone = bucketing_zone(generation, account_zone, self.clock.now())
        statistic = breakdown or "+".join(generation.daily_series)
        # The state (incomplete days, counters) is this selection's: another space's load into the
        # same table neither completes its days nor lends it counters.
        sink.selection = selection_key(hook.linkstats_conn_id, filters, ids)
        sink.generation = generation.name
        sink.create_tables()
        held = (sink.complete_days(statistic), sink.incomplete_zones(statistic))
        change = zone_change(*held, zone)
        run = LoadRun(sink, statistic, breakdown, ids, filters, generation, start, end, zone,
                      _reloaded(sink.incomplete_days(statistic, zone), held[0], change, zone), change, held,
                      planned_in, None)  # fmt: skip
        run = run.replanned(self.clock.now())
        say_zone_change(self.log, change, run.plan, sink, self.inexact(run), breakdown)
        return run

    def inexact(self, run: LoadRun) -> set[Any]:
        """The plan's days fitted after a zone change that this load cannot count exactly: kept
        incomplete (the hour series cannot split them; a breakdown's rows have no hours)."""
        return {t.day for t in run.plan.transitions if not t.exact or run.breakdown is not None}

    def load(self, run: LoadRun) -> dict[str, Any]:
        raise NotImplementedError

    def write(self, run: LoadRun, record_ids: list[int], rows_by_day: dict, learned: dict,
              keep_counters: bool = True) -> int:  # fmt: skip
        """Each day's rows of ``record_ids`` replaced whole, its flag with them; then the counters
        (after the rows: a kill before them costs requests, never rows). The rows written."""
        sink, plan, rows = run.sink, run.plan, 0
        inexact = self.inexact(run) | self.overlapping(run)
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            complete = day.day not in plan.incomplete and day.day not in inexact
            sink.write_day(day.day, plan.zone, run.statistic, record_ids, day_rows, complete, span=day.fitted_span)
            rows += len(day_rows)
        # Read back: a run of this selection in another zone may have written a day sharing hours
        # with ours between the look above and our write (whichever writes last sees the other).
        for day in self.overlapping(run, written=True) - inexact - set(plan.incomplete):
            sink.mark_incomplete(run.statistic, day, plan.zone)
        if learned and keep_counters:
            sink.save_counters(run.statistic, learned)
        return rows

    def overlapping(self, run: LoadRun, written: bool = False) -> set[Any]:
        """The plan's days whose hours a day held complete now shares (read just before the write, and
        after it: ``written``): another run of this selection wrote it across a zone change since this
        one planned; written incomplete, so the next run fits them afresh. After the write, a held day
        is this run's only with this run's span for it."""
        held = run.sink.complete_days(run.statistic)
        mine = {day.day: day for day in run.plan.days}

        def another_runs(date: dt.date, other: Any) -> bool:
            if date not in mine:
                return True
            return written and (mine[date].start, mine[date].end) != (other.start, other.end)

        found = {
            day.day
            for day in run.plan.days
            for date, other in held.items()
            if date != day.day and day.overlaps(other) and another_runs(date, other)
        }
        if found:
            say_overlapping(self.log, found)
        return found


def _reloaded(incomplete: list[dt.date], loaded: dict, change: Any, zone: str) -> tuple[dt.date, ...]:
    """The days loaded again: this zone's incomplete ones, and after a zone change those loaded
    incomplete in the old zone and the first day after the old days, until it is complete here."""
    if change is None:
        return tuple(incomplete)
    own = [day for day, held in loaded.items() if held.zone == zone]
    pending = change.first and max(own, default=dt.date.min) < change.first
    return tuple(sorted(set(incomplete) | set(change.reload) | ({change.first} if pending else set())))


def _merged(rows: list[tuple], key_size: int) -> list[tuple]:
    """Rows with one row per natural key: a breakdown's values that differ only in ways the key
    does not (None and "" both stored as "") are summed."""
    merged: dict[tuple, list] = {}
    for row in rows:
        key = tuple(row[:2]) + tuple(row[3 : 3 + key_size - 2])  # empty past row[:2] for a key of 2
        if key in merged:
            merged[key][-1] += row[-1]
        else:
            merged[key] = list(row)
    return [tuple(row) for row in merged.values()]


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
