"""The days one run loads (``plan_days``, the day rule) and what its answers mean per day
(``DayPlan``: the windows asked, the labels, the days asked alone, completeness). No I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.warehouse.days import ServiceDay, aware, check_zone, days_ending_in, tz_of
from airflow_provider_linkstats.client.warehouse.zones import Transition, ZoneChange

# phpShort 46+ buckets ``click`` by the span asked: hours under a day, days under 90 days apart,
# then months. One request covers at most this many days (margins included), so its rows are days.
MAX_DAYS_PER_REQUEST = 87


@dataclass(frozen=True)
class DayPlan:
    """The days one run loads, in the zone the service selects days by, and which are not over yet."""

    zone: str
    days: tuple[ServiceDay, ...]
    incomplete: frozenset[dt.date]
    today: dt.date  # the service's current day in ``zone``
    now: dt.datetime
    labels: dt.timedelta | None = None  # the offset the daily series' rows are labelled with, if not ``zone``'s days
    transitions: tuple[Transition, ...] = ()  # days fitted between days loaded in another zone
    covered: tuple[dt.date, ...] = ()  # days of the interval the days loaded in another zone cover: not loaded

    @property
    def dates(self) -> list[dt.date]:
        return [day.day for day in self.days]

    def windows(self) -> list[tuple[dt.date, dt.date]]:
        """The ``from``/``to`` of the statistics requests per record covering every day to load.

        At most ``MAX_DAYS_PER_REQUEST`` days each; the last one reaches today when that stays
        within the limit, so its answer also says since when a counter stood still (``steady_since``).
        The service selects exactly the days of ``zone`` from ``from`` to ``to``, whatever the labels.
        """
        if not self.days:
            return []
        first, last = self.days[0].day, self.days[-1].day
        windows = []
        while first <= last:
            to = min(last, first + dt.timedelta(days=MAX_DAYS_PER_REQUEST))
            windows.append((first, to))
            first = to + dt.timedelta(days=1)
        start, to = windows[-1]
        if to < self.today and (self.today - start).days <= MAX_DAYS_PER_REQUEST:
            windows[-1] = (start, self.today)
        return windows

    def labelled_exactly(self, day: ServiceDay) -> bool:
        """Whether the daily series' rows labelled ``day`` are exactly that day's clicks: the labels
        are the zone's days, or the zone had the labels' offset at both of the day's midnights."""
        if self.labels is None:
            return True
        tz, day = tz_of(self.zone), ServiceDay.of(day.day, self.zone)  # the service's day, not a transition's span
        return day.start.astimezone(tz).utcoffset() == self.labels == day.end.astimezone(tz).utcoffset()

    def counts(self, window: tuple[dt.date, dt.date], rows: Iterable[Mapping[str, Any]]) -> dict[dt.date, int]:
        """Clicks per label of one window's answer; a window of one day is that day's, whatever its
        rows' labels (the service selected exactly that day)."""
        per_label = daily_counts(rows)
        if window[0] == window[1]:
            return {window[0]: sum(per_label.values())}
        return per_label

    def ask_alone(self, labelled: Mapping[dt.date, int], windows: Sequence[tuple[dt.date, dt.date]]) -> list[dt.date]:
        """The days to load whose labels are not theirs (``labelled_exactly``), and that may have
        clicks: a label next to them shows some (a click is at most a day's offset from its label).
        Each is asked alone (``from`` = ``to``), unless a window already asked it alone."""
        alone = {first for first, to in windows if first == to}
        one = dt.timedelta(days=1)
        return [
            day.day
            for day in self.days
            if not self.labelled_exactly(day)
            and day.day not in alone
            and any(labelled.get(label) for label in (day.day - one, day.day, day.day + one))
        ]

    def day_counts(
        self,
        labelled: Mapping[dt.date, int],
        windows: Sequence[tuple[dt.date, dt.date]],
        alone: Mapping[dt.date, int | None],
    ) -> dict[dt.date, int | None]:
        """Clicks per day to load: a day asked alone has its answer's (None: not asked, as a
        breakdown asks the day's breakdown instead); a day labelled exactly, or a window's only day,
        its label's; any other day none (``ask_alone`` found no label near it with clicks)."""
        single = {first for first, to in windows if first == to}
        counts: dict[dt.date, int | None] = {}
        for day in self.days:
            if day.day in alone:
                counts[day.day] = alone[day.day]
            elif day.day in single or self.labelled_exactly(day):
                counts[day.day] = labelled.get(day.day, 0)
            else:
                counts[day.day] = 0
        return counts

    def label_end(self, label: dt.date, known: Mapping[dt.date, int | None] | None = None) -> dt.datetime:
        """The moment after every click the service may label ``label``: the end of that day in
        the zone and in the labels' offset, whichever is later, less the days ``known`` to have
        had no click (a day asked alone after a label regime answered 0)."""
        zone_day = ServiceDay.of(label, self.zone)
        if self.labels is None:
            return zone_day.end
        fixed = dt.timezone(self.labels)
        start = min(zone_day.start, dt.datetime.combine(label, dt.time(), fixed))
        end = max(zone_day.end, dt.datetime.combine(label + dt.timedelta(days=1), dt.time(), fixed))
        latest = end
        for day in sorted((day for day, count in (known or {}).items() if count == 0), reverse=True):
            span = ServiceDay.of(day, self.zone)
            if span.start < latest <= span.end:
                latest = span.start
        return latest if latest > start else end  # every moment excluded: the answers disagree, keep the bound


def plan_days(
    interval_start: Any,
    interval_end: Any,
    zone: str,
    now: dt.datetime,
    reload: Iterable[dt.date] = (),
    labels: dt.timedelta | None = None,
    complete_by: dt.datetime | None = None,
    change: ZoneChange | None = None,
) -> DayPlan:
    """The days a run of data interval ``[interval_start, interval_end)`` loads (the day rule),
    plus ``reload`` (days an earlier run loaded before they were over). A day that has not begun
    by ``now`` (the service's clock) is refused: nothing can be loaded for it yet. ``labels``: the
    offset the service labels its daily rows with now (``label_offset``), where not ``zone``'s days.
    A day is complete only if it ended by ``complete_by`` (default ``now``): the moment, by the
    service's clock less its margin, before which no answer the load uses was read; a later one is
    loaded and kept incomplete, so a later run reloads it. ``change``: days of the selection loaded
    in another zone (``zone_change``): the days they cover are left out, and the first day after
    them spans from their end (``Transition``)."""
    start, end = _interval(interval_start, interval_end)
    zone, now = check_zone(zone), aware(now, "now")
    dates = sorted(set(days_ending_in(start, end, zone)) | set(reload))
    days, transitions, covered = _fitted(dates, zone, labels, change)
    _refuse_days_not_begun(days, now, end)
    read_after = now if complete_by is None else min(now, aware(complete_by, "complete_by"))
    incomplete = frozenset(day.day for day in days if day.end > read_after)
    return DayPlan(zone, days, incomplete, now.astimezone(tz_of(zone)).date(), now, labels, transitions, covered)


def _fitted(
    dates: Sequence[dt.date], zone: str, labels: dt.timedelta | None, change: ZoneChange | None
) -> tuple[tuple[ServiceDay, ...], tuple[Transition, ...], tuple[dt.date, ...]]:
    """The spans of ``dates`` as ``change`` fits them, the transitions among them, and the dates it
    leaves out (covered by days loaded in another zone)."""
    if change is None:
        return tuple(ServiceDay.of(day, zone) for day in dates), (), ()
    days: list[ServiceDay] = []
    transitions: list[Transition] = []
    covered: list[dt.date] = []
    for day in dates:
        fit = change.fit(day, labels)
        if fit is None:
            covered.append(day)
        elif isinstance(fit, Transition):
            transitions.append(fit)
            days.append(fit.span)
        else:
            days.append(fit)
    return tuple(days), tuple(transitions), tuple(covered)


def _interval(interval_start: Any, interval_end: Any) -> tuple[dt.datetime, dt.datetime]:
    """The interval's ends as aware moments, the end not before the start."""
    start, end = aware(interval_start, "data_interval_start"), aware(interval_end, "data_interval_end")
    if end < start:
        raise LinkstatsInputError("data_interval_end", end.isoformat(), f"not before data_interval_start ({start})")
    return start, end


def _refuse_days_not_begun(days: Sequence[ServiceDay], now: dt.datetime, end: dt.datetime) -> None:
    """A day that has not begun by the service's ``now`` has no statistics yet: refused."""
    for day in days:
        if day.start >= now:
            raise LinkstatsInputError(
                "data_interval_end",
                end.isoformat(),
                f"an interval whose days have begun: {day.day} in {day.zone} begins at {day.start:%Y-%m-%d %H:%M} "
                f"UTC, after the service's now ({now:%Y-%m-%d %H:%M:%S} UTC); a day in the future has no statistics "
                "yet",
            )


def daily_counts(rows: Iterable[Mapping[str, Any]]) -> dict[dt.date, int]:
    """A daily series' rows (``{"value": "2025-01-31", "count": 3}``, or ``"2025-01-31 23"`` for the
    hours phpShort 46+ answers for a single day; counts may be strings) summed per day."""
    counts: dict[dt.date, int] = {}
    for row in rows:
        value = str(row.get("value") or "")
        try:
            day = dt.date.fromisoformat(value[:10])
        except ValueError:
            raise ValueError(f"a daily statistic answered the bucket {value!r}, not a day ('YYYY-MM-DD')") from None
        counts[day] = counts.get(day, 0) + int(float(row.get("count") or 0))
    return counts
