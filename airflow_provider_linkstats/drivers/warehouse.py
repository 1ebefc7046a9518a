"""The warehouse load's driver: the listing, the statistics requests, the links gone meanwhile, the
reload of days found short, the writes into a sink, and the progress lines.

What it decides is ``client.warehouse``'s plan (the day rule, the counters, which links need a
request), without I/O; the rows go through ``drivers.sinks``. The operators
(``operators/warehouse.py``) turn their arguments into a sink and an interval and the result into
XCom. Imported when a task runs.
"""

from __future__ import annotations

import time
from typing import Any

PROGRESS_EVERY = 30.0  # seconds between progress lines of a long load


class Progress:
    """A log line every ``PROGRESS_EVERY`` seconds: done, left, the rate and the time left, from the
    project's sliding-window progress (``drivers.progress.Progress``), capped by the hook's rate limiter."""

    def __init__(self, log: Any, total: int, what: str, limiter: Any = None) -> None:
        from airflow_provider_linkstats.drivers.progress import Progress as Window

        self.log, self.total, self.what = log, total, what
        self.window = Window(limiter=limiter)
        self.last = time.monotonic()

    def step(self, done: int) -> None:
        from airflow_provider_linkstats.drivers.progress import duration

        self.window.update(done)
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY or done >= self.total:
            return
        self.last = now
        left = self.window.seconds_left(self.total - done)
        after = f", about {duration(left)} left" if left is not None else ""
        self.log.info("%d of %d %s (%.1f/s%s)", done, self.total, self.what, self.window.rate, after)


class StatsLoad:
    """One load of a selection's statistics into ``sink``: the plan of the days, the requests and
    the writes. ``hook`` is the service's hook, ``log`` the task's logger."""

    def __init__(self, hook: Any, log: Any) -> None:
        self.hook, self.log = hook, log
        self.loaded = False  # whether a day was loaded (else the result says why not)

    def run(self, sink: Any, start: Any, end: Any, now: Any, breakdown: str | None,
            ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        """The days of ``start`` to ``end`` loaded: the counts the task returns (without the asset)."""
        import datetime as dt

        from airflow_provider_linkstats.client.generations import ACCOUNT_OFFSET, ACCOUNT_ZONE
        from airflow_provider_linkstats.client.warehouse import (
            aware,
            bucketing_zone,
            label_offset,
            plan_days,
            selection_key,
            zone_change,
        )

        end_moment = aware(end, "data_interval_end")
        hook = self.hook
        generation = hook.generation
        account_zone = hook.settings.timezone
        # The account's zone, when the service counts days in it: read by this task or from the
        # host's learned facts (up to their cache_ttl old), so confirmed after the answers (``_confirm_zone``).
        self._account_zone: str | None = None
        if account_zone is None and generation.stats_zone in (ACCOUNT_ZONE, ACCOUNT_OFFSET):
            account_zone = self._account_zone = hook.service_profile(account=True).timezone
        zone = bucketing_zone(generation, account_zone, self._service_now(now))
        statistic = breakdown or "+".join(generation.daily_series)
        # The state (incomplete days, counters) is this selection's: another space's load into the
        # same table neither completes its days nor lends it counters.
        sink.selection = selection_key(hook.linkstats_conn_id, filters, ids)
        sink.generation = generation.name
        sink.create_tables()
        reload = sink.incomplete_days(statistic, zone)
        # The days this selection loaded in another zone (the account's zone changed): the first day
        # after them is loaded until it is complete in this zone, and their incomplete days again.
        loaded = sink.complete_days(statistic)
        incomplete_zones = sink.incomplete_zones(statistic)
        change = zone_change(loaded, incomplete_zones, zone)
        self._held = (loaded, incomplete_zones)  # what the change was read from (``_reload_short``)
        if change is not None:
            own = [day for day, held in loaded.items() if held.zone == zone]
            pending = change.first and max(own, default=dt.date.min) < change.first
            reload = sorted(set(reload) | set(change.reload) | ({change.first} if pending else set()))
        self.breakdown = breakdown
        self._plan_args = (start, end, zone, reload, generation, change)
        service_now = self._service_now(now)
        plan = plan_days(
            start, end, zone, service_now, reload, label_offset(generation, zone, service_now), change=change
        )
        self._say_zone_change(change, plan, sink)
        if aware(start, "data_interval_start") == end_moment:
            self.log.warning(
                "the data interval is empty (%s: a trigger timetable, such as Airflow 3's schedule=\"@daily\", or a "
                "manual run), so this run loads the day of %s that ended last before it: %s. For days that follow "
                "the logical dates, schedule with data intervals: schedule=CronDataIntervalTimetable(\"0 0 * * *\", "
                "timezone=%r) (from airflow.timetables.interval), which loads the day of each logical date",
                end_moment.isoformat(), zone, ", ".join(map(str, plan.dates)) or "none", account_zone or zone,
            )  # fmt: skip
        if not plan.days:
            if plan.covered:  # said above: within the days loaded in the old zone
                self.log.info("every day of this interval lies within days loaded in another zone: nothing to load")
            else:
                self.log.info("no day of %s ends in this interval (%s to %s): nothing to load", zone, start, end)
            return {"days": [], "zone": zone, "rows": 0, "requests": 0, "minimum_requests": 0}
        self.log.info(
            "%s counts days in %s: loading %s%s", generation.label, zone, ", ".join(map(str, plan.dates)),
            f" ({', '.join(map(str, sorted(plan.incomplete)))} not over yet: reloaded by a later run)"
            if plan.incomplete else "",
        )  # fmt: skip
        result = self.load(plan, sink, generation, statistic, breakdown, ids, filters)
        from airflow_provider_linkstats.drivers.progress import counted

        self.log.info(
            "loaded %s for %s into %s: %d requests (the minimum: %d)", counted(result["rows"], "row"),
            counted(len(plan.days), "day"), sink.describe(), result["requests"], result["minimum_requests"],
        )  # fmt: skip
        self.loaded = True
        return {"days": [d.isoformat() for d in plan.dates], "zone": zone, **result}

    def replan(self, plan: Any, service_now: Any, read_after: Any = None) -> Any:
        """The plan again by the service's clock, once a request has taught it; a day is complete
        only if it ended by ``read_after`` (every answer the load uses was read after it)."""
        from airflow_provider_linkstats.client.warehouse import label_offset, plan_days

        start, end, zone, reload, generation, change = self._plan_args
        labels = label_offset(generation, zone, service_now)
        return plan_days(start, end, zone, service_now, reload, labels, complete_by=read_after, change=change)

    def inexact(self, plan: Any) -> set[Any]:
        """The plan's days fitted after a zone change that this load cannot count exactly: kept
        incomplete (the hour series cannot split them; a breakdown's rows have no hours)."""
        return {t.day for t in plan.transitions if not t.exact or self.breakdown is not None}

    def _confirm_zone(self, plan: Any) -> Any:
        """The plan, with the account's zone read again once every statistics answer is
        in, when the days were planned in a zone taken from the account and one would be complete.
        The account's zone may have changed during the run, or before it while the host's learned
        facts still held the old one: the answers were then counted in another zone's days, and every
        day is written incomplete (the next run, in the zone now, loads them again)."""
        import dataclasses

        if getattr(self, "_account_zone", None) is None or set(plan.dates) <= set(plan.incomplete):
            return plan
        from airflow_provider_linkstats.client.errors import LinkstatsError

        try:
            zone = self.hook.client.account().get("timezone") or "UTC"
        except LinkstatsError as error:  # unconfirmed: nothing is lost by loading the days again
            self.log.warning(
                "the account's time zone could not be read again after the statistics (%s): days %s are written "
                "INCOMPLETE, and the next run loads them again", error, ", ".join(map(str, plan.dates)),
            )  # fmt: skip
            self.zone_unconfirmed = True
            return dataclasses.replace(plan, incomplete=frozenset(plan.dates))
        if zone == self._account_zone:
            return plan
        self.zone_unconfirmed = True  # the counters' moments were read in another zone's days too
        self.hook.forget_learned(f"the account's time zone is now {zone}, not {self._account_zone}")
        self.log.warning(
            "the account's time zone is %s, not %s as this run planned its days with (it changed during the run, or "
            "just before it while this host's learned facts still held the old zone): days %s are written "
            "INCOMPLETE, and the next run loads them again in %s", zone, self._account_zone,
            ", ".join(map(str, plan.dates)), zone,
        )  # fmt: skip
        return dataclasses.replace(plan, incomplete=frozenset(plan.dates))

    def overlapping(self, plan: Any, sink: Any, statistic: str, written: bool = False) -> set[Any]:
        """The plan's days whose hours a day held complete now shares (read again just before the
        write, and after it: ``written``): another run of this selection wrote it since this one
        planned, across a change of the account's zone. Written incomplete, so the next run fits
        them afresh. Before the write, a held day of a date this run writes is not another's (this
        run replaces it); after, only one with this run's span for it is this run's."""
        held = sink.complete_days(statistic)
        mine = {day.day: (day.start, day.end) for day in plan.days}
        found = {
            day.day
            for day in plan.days
            for date, other in held.items()
            if date != day.day and other.start < day.end and day.start < other.end
            and (date not in mine or (written and mine[date] != (other.start, other.end)))
        }
        if found:
            self.log.warning(
                "days %s share hours with days another run of this selection wrote meanwhile in another zone (the "
                "account's time zone changed during the runs): written INCOMPLETE, so the next run loads them "
                "again, fitted to the days held then", ", ".join(map(str, sorted(found))),
            )  # fmt: skip
        return found

    def _say_zone_change(self, change: Any, plan: Any, sink: Any) -> None:
        """A WARNING naming the zones, the days and what was done; what the user can do where a
        day fitted between the zones cannot be made exact."""
        if change is None:
            return
        old, new = " and ".join(change.old) or "an earlier zone (days since deleted)", change.zone
        if change.stranded:
            self.log.warning(
                "days %s were loaded incomplete in %s and the account's time zone is now %s: the days loaded "
                "complete around them hold every hour of theirs, so they stay incomplete (to complete them, delete "
                "the days loaded in %s from %s and load them again)", ", ".join(map(str, change.stranded)), old, new,
                old, sink.describe(),
            )  # fmt: skip
        if change.reload and change.boundary is None:
            self.log.warning(
                "the account's time zone is now %s: days %s, loaded incomplete in %s, are loaded again in %s",
                new, ", ".join(map(str, change.reload)), old, new,
            )  # fmt: skip
        if plan.covered:
            self.log.warning(
                "the account's time zone changed from %s to %s: %s's days %s are held by days loaded complete in %s "
                "(the same dates, or every hour of theirs), so they are not loaded (their clicks are in those days)",
                old, new, new, ", ".join(map(str, plan.covered)), old,
            )  # fmt: skip
        inexact = self.inexact(plan)
        for transition in plan.transitions:
            hours = (transition.end - transition.start).total_seconds() / 3600
            span = f"{transition.start:%Y-%m-%d %H:%M} to {transition.end:%Y-%m-%d %H:%M} UTC ({hours:.4g} hours)"
            if transition.day not in inexact:
                asked = ", ".join(sorted({str(day) for day, _, _ in transition.hours}))
                self.log.warning(
                    "the account's time zone changed from %s to %s: %s in %s is loaded from %s, between the days "
                    "loaded in %s, counted from the hour series of %s, so no hour is in two days or in none",
                    old, new, transition.day, new, span, old, asked,
                )  # fmt: skip
                continue
            why = (
                "a breakdown's rows have no hours" if self.breakdown else "the service's hours do not begin at its ends"
            )
            self.log.warning(
                "the account's time zone changed from %s to %s: %s in %s spans %s between the days loaded complete in "
                "%s, and cannot be counted exactly (%s): it is written and kept INCOMPLETE, and each run loads it "
                "again. What you can do: have every day in %s, by deleting the days loaded in %s from %s (their "
                "rows, and their state: the days table's rows of zone %s, or the days of that zone in the "
                "selection's _state/<selection>/zones.json) and loading them again; or leave %s incomplete",
                old, new, transition.day, new, span, old, why, new, old, sink.describe(), old, transition.day,
            )  # fmt: skip

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

    def load(self, plan: Any, sink: Any, generation: Any, statistic: str, breakdown: str | None,
             ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        raise NotImplementedError


class LinkStatsLoad(StatsLoad):
    @staticmethod
    def schema_for(breakdown: str | None) -> Any:
        from airflow_provider_linkstats.drivers.sinks import LINK_BREAKDOWN, LINK_DAILY

        return LINK_BREAKDOWN if breakdown else LINK_DAILY

    def load(self, plan: Any, sink: Any, generation: Any, statistic: str, breakdown: str | None,
             ids: list[int] | None, filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        import datetime as dt

        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError
        from airflow_provider_linkstats.client.warehouse import (
            Counter,
            Listed,
            ServiceDay,
            daily_counts,
            first_day_found_short,
            hours_from,
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
            before_windows = 0  # clicks the windows do not hold: hours of a day before the first window's
            inexact = self.inexact(plan)
            try:
                for transition in plan.transitions:
                    if transition.day in inexact:
                        continue
                    # A day fitted between the zones: the hours of its span, from the hour series of the
                    # days it reaches into (a day asked alone is answered in hours).
                    hours = 0
                    for day, begins, ends in transition.hours:
                        requests += 1
                        asked_alone += 1
                        found = hours_from(hook.iter_stats(link_id, series, day, day), begins, plan.zone, plan.labels,
                                           until=ends)  # fmt: skip
                        hours += found
                        before_windows += found if windows and day < windows[0][0] else 0
                    whole = counts[link_id].get(transition.day) or 0 if transition.whole else 0
                    counts[link_id][transition.day] = whole + hours
            except LinkstatsNotFoundError as error:
                requests += self._confirm_gone(link_id, error)
                gone.append(link_id)
                del counts[link_id]
                progress.step(done + 1)
                continue
            link = listed[link_id]
            if link.clicks is not None:
                steady = steady_since(listed_at, labelled, windows, plan, counts[link_id])
                if before_windows:  # clicked in those hours: held its value from the first day's own start at best
                    steady = max(steady, ServiceDay.of(plan.days[0].day, plan.zone).start)
                learned[link_id] = Counter(link.clicks, steady, link.alias)
                # The clicks this run's days hold: a day fitted after a zone change by its span (not its
                # label's, whose hours other days hold), and no label of a day held in another zone (a
                # click counted there since is a click that day is short of).
                fitted = {t.day for t in plan.transitions} - inexact
                held = self._plan_args[5].taken if self._plan_args[5] is not None else frozenset()
                answered = sum(n for day, n in labelled.items() if day not in fitted and day not in held)
                answered += sum(counts[link_id].get(day) or 0 for day in fitted)  # their hours before the windows too
                found = first_day_found_short(link.clicks, known.get(link_id), answered, windows, plan)
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
        plan = self._confirm_zone(plan)
        return self.write(plan, sink, statistic, record_ids, rows_by_day, learned) | {
            "links": len(listed),
            "gone": gone,
            "fetched": len(wanted),
            "requests": requests + pages,  # the account's reads (its zone) aside, as the docs say
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

        start, end, zone, reload, generation, change = self._plan_args
        first = plan.days[0].day
        extra = {earliest + dt.timedelta(days=n) for n in range((first - earliest).days)}
        self.log.info(
            "%d links counted more clicks since they were last read than their answers from %s hold: the days "
            "from %s were loaded before those clicks came, and are loaded again by this run", links, first, earliest,
        )  # fmt: skip
        if change is not None and extra & change.taken and not self.inexact(plan):
            # Days loaded complete in the old zone, found short: the old zone's days can no longer be
            # asked, so they are loaded again in this zone, fitted as its other days are. (Not with a
            # day that cannot be counted exactly: the answers then cannot tell a short day from the
            # hours that day holds, and the old zone's days are left as they are.)
            from airflow_provider_linkstats.client.warehouse import zone_change

            loaded, incomplete_zones = self._held
            gone_short = extra & change.taken
            change = zone_change(
                {day: held for day, held in loaded.items() if day not in gone_short},
                {**incomplete_zones, **{day: loaded[day].zone for day in gone_short}}, zone,
            )  # fmt: skip
        self._plan_args = (start, end, zone, sorted(set(reload) | extra), generation, change)
        self._reloaded_short = True
        replanned = self.replan(plan, now)
        result = self.load(replanned, *load)
        result["requests"] += spent
        result["minimum_requests"] += spent  # the first pass is what found the days short
        return result | {"days": [day.isoformat() for day in replanned.dates]}

    def write(self, plan: Any, sink: Any, statistic: str, record_ids: list[int], rows_by_day: dict,
              learned: dict) -> dict[str, Any]:  # fmt: skip
        rows = 0
        inexact = self.inexact(plan) | self.overlapping(plan, sink, statistic)
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            complete = day.day not in plan.incomplete and day.day not in inexact
            sink.write_day(day.day, plan.zone, statistic, record_ids, day_rows, complete, span=_span(day))
            rows += len(day_rows)
        # Read back: a run of this selection in another zone may have written a day sharing hours
        # with ours between the look above and our write (whichever writes last sees the other).
        for day in self.overlapping(plan, sink, statistic, written=True) - inexact - set(plan.incomplete):
            sink.mark_incomplete(statistic, day, plan.zone)
        if learned and not getattr(self, "zone_unconfirmed", False):  # moments read in another zone's days: not kept
            sink.save_counters(statistic, learned)  # after the rows: a kill before it costs requests, never rows
        return {"rows": rows}


class WebsiteStatsLoad(StatsLoad):
    @staticmethod
    def schema_for(breakdown: str | None) -> Any:
        from airflow_provider_linkstats.drivers.sinks import WEBSITE_BREAKDOWN, WEBSITE_DAILY

        return WEBSITE_BREAKDOWN if breakdown else WEBSITE_DAILY

    def inexact(self, plan: Any) -> set[Any]:
        """Websites are counted in UTC days (no zone change); were one met, no hours are asked."""
        return {transition.day for transition in plan.transitions}

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
        inexact = self.inexact(plan) | self.overlapping(plan, sink, statistic)
        for day in plan.days:
            day_rows = _merged(rows_by_day[day.day], key_size=len(sink.schema.key))
            complete = day.day not in plan.incomplete and day.day not in inexact
            sink.write_day(day.day, plan.zone, statistic, written, day_rows, complete, span=_span(day))
            rows += len(day_rows)
        # Read back, as the links' load does.
        for day in self.overlapping(plan, sink, statistic, written=True) - inexact - set(plan.incomplete):
            sink.mark_incomplete(statistic, day, plan.zone)
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


def _span(day: Any) -> Any:
    """A day's UTC span when it is not its zone's midnights (fitted after a zone change), else None:
    kept with the day, so that a later load fits its own days around it."""
    from airflow_provider_linkstats.client.warehouse import ServiceDay

    natural = ServiceDay.of(day.day, day.zone)
    return None if (day.start, day.end) == (natural.start, natural.end) else (day.start, day.end)


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
