"""The websites' load as plain stages: list the websites, fetch each one's daily series (a request
per statistic and window) or its breakdown (a request per day), write the days. Websites are
counted in UTC days: no counter, no zone change to fit."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.drivers.warehouse.notes import say_gone
from airflow_provider_linkstats.drivers.warehouse.progress import Progress
from airflow_provider_linkstats.drivers.warehouse.run import LoadRun, StatsLoad, breakdown_of
from airflow_provider_linkstats.drivers.warehouse.service import confirm_gone


@dataclass
class Tally:
    """The requests a load made so far, and a breakdown's pages."""

    requests: int = 0
    pages: int = 0


class WebsiteStatsLoad(StatsLoad):
    @staticmethod
    def schema_for(breakdown: str | None) -> Any:
        from airflow_provider_linkstats.drivers.warehouse.schema import WEBSITE_BREAKDOWN, WEBSITE_DAILY

        return WEBSITE_BREAKDOWN if breakdown else WEBSITE_DAILY

    def inexact(self, run: LoadRun) -> set[Any]:
        """Websites are counted in UTC days (no zone change); were one met, no hours are asked."""
        return {transition.day for transition in run.plan.transitions}

    def load(self, run: LoadRun) -> dict[str, Any]:
        from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError

        began = self.clock.watch_reads()  # before the first request whose answer this load uses
        ids, pages, listing = self.listed(run)
        clock_known = self.clock.known
        run = run.replanned(self.clock.now(), self.clock.read_after(began, listing))
        per_website = len(run.plan.days) if run.breakdown else len(self.names(run)) * len(run.plan.windows())
        progress = Progress(self.log, len(ids) * per_website, "requests answered",
                            getattr(self.hook.client, "limiter", None))  # fmt: skip
        rows_by_day: dict[dt.date, list[tuple]] = {day.day: [] for day in run.plan.days}
        tally = Tally()
        gone: list[int] = []  # deleted between the listing and their statistics: their rows stay as they were
        for done, website_id in enumerate(ids):
            try:
                rows = self.fetch_website(run, website_id, tally)
            except LinkstatsNotFoundError as error:
                tally.requests += confirm_gone(self.hook, website_id, error)
                gone.append(website_id)
            else:
                for day, row in rows:
                    rows_by_day[day].append(row)
            progress.step(tally.requests, tally.requests + (len(ids) - done - 1) * per_website)
        run = run.settled(self.clock, began, listing, clock_known)
        say_gone(self.log, gone, "websites", run.sink)
        written = self.write(run, [i for i in ids if i not in set(gone)], rows_by_day, {})
        return {
            "websites": len(ids),
            "gone": gone,
            "rows": written,
            "requests": tally.requests + pages,
            # a breakdown: a request per website and day, and a page more per 100 values
            "minimum_requests": pages + (tally.pages if run.breakdown else len(ids) * per_website),
        }

    def listed(self, run: LoadRun) -> tuple[list[int], int, Any]:
        """The websites (their ids), the listing's pages and the listing (None: ids given)."""
        if run.ids is not None:
            return list(run.ids), 0, None
        listing = self.hook.iter_records(run.filters, complete=True)  # skips no website, however the listing moves
        return [int(website["id"]) for website in listing], listing.pages, listing

    @staticmethod
    def names(run: LoadRun) -> tuple[str, ...]:
        return (run.breakdown,) if run.breakdown else tuple(run.generation.daily_series)

    def fetch_website(self, run: LoadRun, website_id: int, tally: Tally) -> list[tuple[dt.date, tuple]]:
        """One website's rows per day; its requests (a 404 is one too) counted in ``tally``."""
        if run.breakdown:
            return self.fetch_breakdown(run, website_id, tally)
        from airflow_provider_linkstats.client.warehouse import daily_counts

        names, windows = self.names(run), run.plan.windows()
        series: dict[str, dict[dt.date, int]] = {}
        for name in names:
            series[name] = {}
            for first, to in windows:
                tally.requests += 1
                series[name].update(daily_counts(self.hook.iter_stats(website_id, name, first, to)))
        rows = []
        for day in run.plan.dates:
            values = [series[name].get(day, 0) for name in names]
            if any(values):
                rows.append((day, (website_id, day.isoformat(), run.plan.zone, *values)))
        return rows

    def fetch_breakdown(self, run: LoadRun, website_id: int, tally: Tally) -> list[tuple[dt.date, tuple]]:
        rows = []
        for day in run.plan.dates:
            tally.requests += 1  # the first page (a deleted website's 404 is a request too)
            found, day_pages = breakdown_of(self.hook, website_id, run.breakdown, day)
            tally.requests += day_pages - 1
            tally.pages += day_pages
            rows += [(day, (website_id, day.isoformat(), run.plan.zone, run.breakdown, value, count))
                     for value, count in found]  # fmt: skip
        return rows
