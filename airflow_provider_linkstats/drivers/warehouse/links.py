"""The links' load as plain stages: list (the links and their counters), decide (which links need a
request: ``client.warehouse.links_to_fetch``), fetch (the daily series, the days asked alone, the
hours of days fitted after a zone change, then a breakdown's days), write and record (the sink's
rows, flags and counters). A pass that finds days an earlier run loaded short is followed by one
more pass reaching back to them: a loop of at most two passes, never a load calling itself."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.drivers.warehouse.notes import say_gone
from airflow_provider_linkstats.drivers.warehouse.progress import Progress
from airflow_provider_linkstats.drivers.warehouse.run import LoadRun, StatsLoad, breakdown_of
from airflow_provider_linkstats.drivers.warehouse.service import confirm_gone, confirm_zone


@dataclass(frozen=True)
class Listing:
    """What the list stage found: each link's counter (None: asked for by id) and alias, when the
    first request left (``began``, the worker's clock), the service's moment the counters held at
    least from (``listed_at``), and the counters saved for the selection (``known``)."""

    listed: dict[int, Any]
    pages: int
    reader: Any
    began: float
    service_now: dt.datetime
    listed_at: dt.datetime
    clock_known: bool
    known: dict[int, Any]


@dataclass
class Fetched:
    """What the fetch stage found: clicks per link and day (None: a day its breakdown asks alone), the
    counters learned, the links gone meanwhile, and the first day short of each link whose counter
    grew by more than its answers hold."""

    wanted: list[int]
    counts: dict[int, dict[dt.date, int | None]] = field(default_factory=dict)
    learned: dict[int, Any] = field(default_factory=dict)
    gone: list[int] = field(default_factory=list)
    requests: int = 0
    asked_alone: int = 0
    short: list[dt.date] = field(default_factory=list)
    breakdown_days: int = 0  # (link, day) pairs a breakdown asks: the days with clicks
    rows_by_day: dict[dt.date, list[tuple]] = field(default_factory=dict)


@dataclass(frozen=True)
class Pass:
    """One pass's run (replanned by the service's clock), what it fetched, and its progress."""

    run: LoadRun
    result: Fetched
    progress: Progress


class LinkGone(Exception):
    """A link answered 404 and the link itself too: deleted after the listing read it."""


class LinkStatsLoad(StatsLoad):
    @staticmethod
    def schema_for(breakdown: str | None) -> Any:
        from airflow_provider_linkstats.drivers.warehouse.schema import LINK_BREAKDOWN, LINK_DAILY

        return LINK_BREAKDOWN if breakdown else LINK_DAILY

    def load(self, run: LoadRun) -> dict[str, Any]:
        listing, fetched = self.passed(run)
        run = self.settle(listing, fetched.run)
        spent = 0
        if fetched.result.short and not run.widened:  # once a run: the second pass starts earlier
            spent = fetched.result.requests + listing.pages
            run = self.widened(run, min(fetched.result.short), len(fetched.result.short), spent)
            listing, fetched = self.passed(run)
            run = self.settle(listing, fetched.run)
        result, progress = fetched.result, fetched.progress
        self.fetch_breakdowns(run, result, progress)
        return self.written(run, listing, result) | {"days": [day.isoformat() for day in run.plan.dates]} | {
            "requests": result.requests + listing.pages + spent,
            "minimum_requests": self.minimum(run, listing, result) + spent,  # the first pass found the days short
        }

    def passed(self, run: LoadRun) -> tuple[Listing, Pass]:
        """One pass: list, replan by the service's clock, decide, fetch the daily series."""
        listing = self.listed(run)
        run = run.replanned(listing.service_now, self.clock.read_after(listing.began, listing.reader))
        wanted = self.decided(run, listing)
        progress = Progress(self.log, 0, "requests answered", getattr(self.hook.client, "limiter", None))
        return listing, Pass(run, self.fetched(run, listing, wanted, progress), progress)

    def settle(self, listing: Listing, run: LoadRun) -> LoadRun:
        return run.settled(self.clock, listing.began, listing.reader, listing.clock_known)

    def listed(self, run: LoadRun) -> Listing:
        from airflow_provider_linkstats.client.warehouse import Listed

        known = run.sink.counters(run.statistic)
        began = self.clock.watch_reads()  # before the first request whose answer this load uses
        if run.ids is None:
            reader = self.hook.iter_records(run.filters, complete=True)  # skips no link, however the listing moves
            listed = {int(link["id"]): Listed.of(link) for link in reader}
            pages = reader.pages
        else:
            listed, pages, reader = {i: Listed(None) for i in run.ids}, 0, None
        # The service's moment the listing began (its Date header's clock, less the time the pages
        # took and the header's second): a counter read then held its value at least from there.
        now = self.clock.now()
        listed_at = now - dt.timedelta(seconds=time.time() - began + 1)
        return Listing(listed, pages, reader, began, now, listed_at, self.clock.known, known)

    def decided(self, run: LoadRun, listing: Listing) -> list[int]:
        from airflow_provider_linkstats.client.warehouse import links_to_fetch, untrusted_counters

        listed, known = listing.listed, listing.known
        untrusted = untrusted_counters(listed, known)
        reasons = links_to_fetch(listed, known, run.plan, untrusted)
        self.log.info("%d links listed, %d with new clicks to fetch (%d unchanged)", len(listed), len(reasons),
                      len(listed) - len(reasons))  # fmt: skip
        if run.ids is None and not known:
            self.log.info("no counters saved for this selection yet (or only another generation's): every link "
                          "listed is fetched (a counter of 0 may be a reset); later runs fetch only the links "
                          "whose counter moved")  # fmt: skip
        if untrusted is not None:
            self.log.warning("%s this run: every link listed is fetched", untrusted)
            return list(reasons)
        unusual_reasons = ("counter went down", "re-created", "another alias")
        unusual = {i: why for i, why in reasons.items() if why.startswith(unusual_reasons)}
        if unusual:
            shown = ", ".join(f"link {i}: {why}" for i, why in list(unusual.items())[:10])
            self.log.warning("%d links fetched whatever their counter: %s", len(unusual), shown)
        return list(reasons)

    def fetched(self, run: LoadRun, listing: Listing, wanted: list[int], progress: Progress) -> Fetched:
        """The daily series of each link ``wanted`` (and its days asked alone and fitted hours)."""
        found = Fetched(wanted)
        windows = run.plan.windows()
        for done, link_id in enumerate(wanted):
            try:
                labelled, before_windows = self.fetch_link(run, link_id, windows, found)
            except LinkGone:
                found.gone.append(link_id)
                found.counts.pop(link_id, None)
            else:
                self.learn(run, listing, link_id, (labelled, before_windows), windows, found)
            progress.step(found.requests, self.expected(run, found, len(wanted) - done - 1, len(windows)))
        return found

    def fetch_link(self, run: LoadRun, link_id: int, windows: list, found: Fetched) -> tuple[dict[dt.date, int], int]:
        """One link's counts per day into ``found`` (or ``LinkGone``): its clicks per label, and those
        of fitted hours before the first window's day."""
        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError

        try:
            labelled = self.labelled(run, link_id, windows, found)
            alone = self.asked_alone(run, link_id, labelled, windows, found)
            found.counts[link_id] = run.plan.day_counts(labelled, windows, alone)
            before_windows = self.fitted_hours(run, link_id, windows, found)
        except LinkstatsNotFoundError as error:
            found.requests += confirm_gone(self.hook, link_id, error)
            raise LinkGone(link_id) from error
        return labelled, before_windows

    def labelled(self, run: LoadRun, link_id: int, windows: list, found: Fetched) -> dict[dt.date, int]:
        """Clicks per label: a click is in one window's answer, whatever day it is labelled."""
        labelled: dict[dt.date, int] = {}
        series = run.generation.daily_series[0]
        for first, to in windows:
            found.requests += 1
            for day, count in run.plan.counts((first, to), self.hook.iter_stats(link_id, series, first, to)).items():
                labelled[day] = labelled.get(day, 0) + count
        return labelled

    def asked_alone(self, run: LoadRun, link_id: int, labelled: dict, windows: list,
                    found: Fetched) -> dict[dt.date, int | None]:  # fmt: skip
        """Days the labels do not match (a DST change since): asked alone, the service's selection
        is then exactly the day (a breakdown asks its own request of the day instead: None)."""
        from airflow_provider_linkstats.client.warehouse import daily_counts

        alone: dict[dt.date, int | None] = {day: None for day in run.plan.ask_alone(labelled, windows)}
        if run.breakdown is not None:
            return alone
        series = run.generation.daily_series[0]
        for day in alone:
            found.requests += 1
            found.asked_alone += 1
            alone[day] = sum(daily_counts(self.hook.iter_stats(link_id, series, day, day)).values())
        return alone

    def fitted_hours(self, run: LoadRun, link_id: int, windows: list, found: Fetched) -> int:
        """A day fitted between the zones counts the hours of its span, from the hour series of the
        days it reaches into. Returns the clicks of those hours before the first window's day."""
        from airflow_provider_linkstats.client.warehouse import hours_from

        inexact, counts = self.inexact(run), found.counts[link_id]
        series, plan = run.generation.daily_series[0], run.plan
        before_windows = 0
        for transition in (t for t in plan.transitions if t.day not in inexact):
            hours = 0
            for day, begins, ends in transition.hours:
                found.requests += 1
                found.asked_alone += 1
                rows = self.hook.iter_stats(link_id, series, day, day)
                clicks = hours_from(rows, begins, plan.zone, plan.labels, until=ends)
                hours += clicks
                before_windows += clicks if windows and day < windows[0][0] else 0
            whole = counts.get(transition.day) or 0 if transition.whole else 0
            counts[transition.day] = whole + hours
        return before_windows

    def learn(self, run: LoadRun, listing: Listing, link_id: int, answer: tuple[dict, int], windows: list,
              found: Fetched) -> None:  # fmt: skip
        """The counter learned from a link's answer, and the first day found short, if any."""
        from airflow_provider_linkstats.client.warehouse import Counter, ServiceDay, first_day_found_short, steady_since

        counts, (labelled, before_windows) = found.counts[link_id], answer
        link, plan = listing.listed[link_id], run.plan
        found.breakdown_days += sum(1 for day in plan.dates if counts.get(day) != 0) if run.breakdown else 0
        if link.clicks is None:
            return
        steady = steady_since(listing.listed_at, labelled, windows, plan, counts)
        if before_windows:  # clicked in those hours: held its value from the first day's own start at best
            steady = max(steady, ServiceDay.of(plan.days[0].day, plan.zone).start)
        found.learned[link_id] = Counter(link.clicks, steady, link.alias)
        answered = self.answered(run, labelled, counts)
        short = first_day_found_short(link.clicks, listing.known.get(link_id), answered, windows, plan)
        found.short += [short] if short else []

    def answered(self, run: LoadRun, labelled: dict[dt.date, int], counts: dict[dt.date, int | None]) -> int:
        """The clicks this run's days hold: a day fitted after a zone change by its span (not its
        label's, whose hours other days hold), and no label of a day held in another zone (a click
        counted there since is a click that day is short of)."""
        fitted = {t.day for t in run.plan.transitions} - self.inexact(run)
        held = run.change.taken if run.change is not None else frozenset()
        answered = sum(n for day, n in labelled.items() if day not in fitted and day not in held)
        return answered + sum(counts.get(day) or 0 for day in fitted)  # their hours before the windows too

    @staticmethod
    def expected(run: LoadRun, found: Fetched, links_left: int, windows: int) -> int:
        """The requests this pass is expected to make: those made, the breakdown days found so far, and
        the links left at the average cost of those fetched."""
        fetched = len(found.counts) + len(found.gone)
        pending = found.breakdown_days
        first_guess = windows + (len(run.plan.days) if run.breakdown else 0)
        per_link = (found.requests + pending) / fetched if fetched else first_guess
        return found.requests + pending + round(links_left * per_link)

    def fetch_breakdowns(self, run: LoadRun, found: Fetched, progress: Progress) -> None:
        """The rows per day: a daily load's counts, or a breakdown's rows of each day with clicks."""
        plan = run.plan
        found.rows_by_day = {day.day: [] for day in plan.days}
        pending = [(link_id, day) for link_id, per_day in found.counts.items()
                   for day in found.rows_by_day if per_day.get(day) != 0]  # fmt: skip
        found.breakdown_days = len(pending) if run.breakdown else 0
        if run.breakdown is None:
            for link_id, day in pending:
                found.rows_by_day[day].append((link_id, day.isoformat(), plan.zone, found.counts[link_id][day]))
            return
        for index, (link_id, day) in enumerate(pending):
            if link_id not in found.gone:
                self.fetch_breakdown(run, link_id, day, found)
            progress.step(found.requests, found.requests + len(pending) - index - 1)

    def fetch_breakdown(self, run: LoadRun, link_id: int, day: dt.date, found: Fetched) -> None:
        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError

        try:
            rows, pages = breakdown_of(self.hook, link_id, run.breakdown, day)
        except LinkstatsNotFoundError as error:
            found.requests += 1 + confirm_gone(self.hook, link_id, error)
            found.gone.append(link_id)
            return
        found.requests += pages
        zone = run.plan.zone
        found.rows_by_day[day].extend((link_id, day.isoformat(), zone, run.breakdown, value, n) for value, n in rows)

    def written(self, run: LoadRun, listing: Listing, found: Fetched) -> dict[str, Any]:
        gone = set(found.gone)
        rows_by_day = {day: [row for row in rows if row[0] not in gone] for day, rows in found.rows_by_day.items()}
        learned = {i: c for i, c in found.learned.items() if i not in gone}
        say_gone(self.log, found.gone, "links", run.sink)
        plan, unconfirmed = confirm_zone(self.hook, self.log, run.planned_in, run.plan)
        run = dataclasses.replace(run, plan=plan)
        record_ids = [i for i in listing.listed if i not in gone]
        # moments read in another zone's days: the counters are not kept
        rows = self.write(run, record_ids, rows_by_day, learned, keep_counters=not unconfirmed)
        return {"rows": rows, "links": len(listing.listed), "gone": found.gone, "fetched": len(found.wanted)}

    @staticmethod
    def minimum(run: LoadRun, listing: Listing, found: Fetched) -> int:
        from airflow_provider_linkstats.client.warehouse import minimum_requests

        return minimum_requests(
            listed=len(listing.listed) if run.ids is None else None, changed=len(found.wanted),
            windows=len(run.plan.windows()), breakdown_days=found.breakdown_days, alone=found.asked_alone,
        )  # fmt: skip

    def widened(self, run: LoadRun, earliest: dt.date, links: int, spent: int) -> LoadRun:
        """The run again from ``earliest``: days an earlier run loaded before clicks on them were
        counted (links' counters grew by more than the answers hold). Nothing was written yet."""
        from airflow_provider_linkstats.client.warehouse import zone_change

        first = run.plan.days[0].day
        extra = {earliest + dt.timedelta(days=n) for n in range((first - earliest).days)}
        self.log.info(
            "%d links counted more clicks since they were last read than their answers from %s hold: the days "
            "from %s were loaded before those clicks came, and are loaded again by this run", links, first, earliest,
        )  # fmt: skip
        change = run.change
        if change is not None and extra & change.taken and not self.inexact(run):
            # Days loaded complete in the old zone, found short: the old zone's days can no longer be
            # asked, so they are loaded again in this zone, fitted as its other days are. (Not with a
            # day that cannot be counted exactly: the answers then cannot tell a short day from the
            # hours that day holds, and the old zone's days are left as they are.)
            loaded, incomplete_zones = run.held
            gone_short = extra & change.taken
            change = zone_change(
                {day: held for day, held in loaded.items() if day not in gone_short},
                {**incomplete_zones, **{day: loaded[day].zone for day in gone_short}}, run.zone,
            )  # fmt: skip
        widened = dataclasses.replace(run, reload=tuple(sorted(set(run.reload) | extra)), change=change,
                                      spent=spent, widened=True)  # fmt: skip
        return widened.replanned(self.clock.now())
