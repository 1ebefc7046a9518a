"""The plan of a statistics load into a warehouse: which service days a run loads, and which
records need a statistics request. No I/O and no Airflow: ``drivers/warehouse.py`` drives it.

**The day rule.** Each generation selects statistics' days in one zone (``Generation.stats_zone``:
UTC for phpShort 44-45 and phpAnalytics; the account's own zone, DST-aware, for phpShort 46+). A
run whose data interval is ``[start, end)`` loads the days of that zone that *end* in ``(start,
end]``. Every day belongs to exactly one of a schedule's back-to-back intervals (so a backfill
loads each day once, and on a DST night the day of 23 or 25 hours is loaded whole, once), and a
day is over by the time its run is due. An empty interval (a manual run on Airflow 3, whose
interval starts and ends at its logical date) loads the day that ended last before it: the days
ending in the day before its end. A day not over by the service's clock is loaded and recorded as
incomplete, and any later run of the same load reloads it; a day not begun is refused before any
request.

**Labels that are not the days.** phpShort 46+ selects the account's calendar days exactly, but
labels the rows of its ``click`` series with the UTC offset the zone has *when asked*
(``DayPlan.labels``): a day whose own offset differs at either of its midnights (a summer day asked
in winter, the day of a DST change) is not its label's day. Those days are asked alone (``from`` =
``to``: the service's selection is then exactly the day, whatever its rows are labelled), when the
labels next to them show clicks (``DayPlan.ask_alone``).

**The account's zone changed.** phpShort 46+ counts days in the zone the account has when asked,
so after a change the days already loaded (in the old zone) and the new zone's days overlap (a
zone to the east) or leave hours between them (to the west). ``zone_change`` reads it from the
days the destination holds complete for the selection (``LoadedDay``: zone and UTC span), and
fits each day of the new zone between them (``ZoneChange.span``): a date held in another zone is
not loaded (its rows are that zone's), nor a day whose every hour is held; a day next to held days
is clipped where they hold its hours and extended over the hours no held day has next to a date
held in another zone (``Transition``), at either end of the old days (the first day after them, a
backfill before them). Its clicks are counted exactly from the hour series of the days its span
reaches into (a day asked alone is answered in hours); where the hours cannot say it (a cut off
the hours' labels, a breakdown), it is written and kept incomplete. Its span is kept with it, so
later loads fit around it. Days loaded incomplete in the old zone are loaded again in the new one.

**Only what changed.** The links listing carries every link's ``clicks`` counter. The load keeps,
per link, the counter and the earliest moment it is known to have held it (``Counter``): a link
whose counter is the same now and held already when the first day to load began had no click on
any of those days, so it needs no statistics request. After a request, that moment is learned
from the answer (the request asks through today, so the last day with clicks says since when the
counter stood still). A request per changed link and statistic, plus the listing pages, is the
minimum (``minimum_requests``).

**Counters that go down or restart.** A counter lower than last seen was reset (phpShort's v46
upgrade reset every link's) or belongs to a re-created link; a link id not seen before under a
known alias is a re-created link; counters saved under another generation (an install upgraded
from 44-45 to 46+) say nothing about today's. Those links are fetched. A selection with no saved
counters at all (a new table, a new filter) fetches every link listed, whatever its counter
reads: a counter of 0 may be a reset, and only the statistics say whether the link had clicks on
those days (a link's ``created_at`` is no bound either: an imported link's clicks may precede
it). The counters are kept per selection (``drivers.sinks``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.generations import ACCOUNT_OFFSET, ACCOUNT_ZONE, Generation

UTC = dt.timezone.utc
PAGE_SIZE = 100  # links per listing page (the largest per_page the services take)
# phpShort 46+ buckets ``click`` by the span asked: hours under a day, days under 90 days apart,
# then months. One request covers at most this many days (margins included), so its rows are days.
MAX_DAYS_PER_REQUEST = 87
OFFSET_ZONE = re.compile(r"UTC([+-])(\d\d):(\d\d)")


def bucketing_zone(generation: Generation, account_zone: str | None, now: dt.datetime) -> str:
    """The zone whose calendar days ``generation`` selects statistics by, for an account in
    ``account_zone`` (phpShort 46+: that zone, DST-aware; the labels are another matter: ``label_offset``)."""
    if generation.stats_zone in (ACCOUNT_ZONE, ACCOUNT_OFFSET):
        return account_zone or "UTC"
    return generation.stats_zone


def label_offset(generation: Generation, zone: str, now: dt.datetime) -> dt.timedelta | None:
    """The fixed UTC offset ``generation`` labels its daily series with when asked at ``now``
    (phpShort 46+: the zone's offset at that moment, MySQL's CONVERT_TZ with an offset name), or
    None where the labels are the zone's own days."""
    if generation.stats_zone != ACCOUNT_OFFSET:
        return None
    return now.astimezone(tz_of(zone)).utcoffset() or dt.timedelta(0)


def offset_name(offset: dt.timedelta) -> str:
    """``UTC-05:00``, ``UTC+05:30``, ``UTC``: a fixed offset as ``tz_of`` reads it."""
    if not offset:
        return "UTC"
    minutes = int(abs(offset).total_seconds() // 60)
    return f"UTC{'-' if offset < dt.timedelta(0) else '+'}{minutes // 60:02d}:{minutes % 60:02d}"


def tz_of(zone: str) -> dt.tzinfo:
    """A zone name (IANA) or a fixed offset as ``bucketing_zone`` names it (``UTC+05:30``)."""
    fixed = OFFSET_ZONE.fullmatch(zone)
    if fixed:
        sign = -1 if fixed.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(fixed.group(2)), minutes=int(fixed.group(3))))
    return ZoneInfo(zone)


@dataclass(frozen=True)
class ServiceDay:
    """One calendar day of the service's statistics: its date, the zone, and its UTC bounds."""

    day: dt.date
    zone: str
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def of(cls, day: dt.date, zone: str) -> ServiceDay:
        tz = tz_of(zone)
        start = dt.datetime.combine(day, dt.time(), tz).astimezone(UTC)
        end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tz).astimezone(UTC)
        return cls(day, zone, start, end)


def days_ending_in(start: dt.datetime, end: dt.datetime, zone: str) -> list[dt.date]:
    """The days of ``zone`` that end in ``(start, end]`` (aware moments), oldest first; for an empty
    interval (``start == end``), the day that ended last by ``end``."""
    tz = tz_of(zone)
    if start == end:
        start = end - dt.timedelta(days=1)
    first = start.astimezone(tz).date() - dt.timedelta(days=1)
    last = end.astimezone(tz).date()
    found = []
    day = first
    while day <= last:
        bounds = ServiceDay.of(day, zone)
        if start < bounds.end <= end:
            found.append(day)
        day += dt.timedelta(days=1)
    return found


@dataclass(frozen=True)
class LoadedDay:
    """A day the destination holds loaded complete for a selection: the zone it was loaded in and
    the UTC span its rows count (its zone's midnights, unless it was fitted next to another zone's
    days: ``Transition``)."""

    zone: str
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def of(cls, day: dt.date, zone: str, span: tuple[dt.datetime, dt.datetime] | None = None) -> LoadedDay:
        if span is not None:
            return cls(zone, span[0], span[1])
        natural = ServiceDay.of(day, zone)
        return cls(zone, natural.start, natural.end)


# One range of an hour series: (the day asked alone, from, to): its hours that begin in [from, to).
HourRange = tuple[dt.date, dt.datetime, dt.datetime]


@dataclass(frozen=True)
class Transition:
    """A day of ``zone`` fitted between days loaded complete in another zone: it spans ``start``
    to ``end`` instead of its own midnights (clipped where another day holds the hours, extended
    over the hours no loaded day holds next to a date another zone holds). Its clicks: the day's own
    count if ``whole`` (from the windows), plus the ``hours`` ranges of the days asked alone (a day
    asked alone is answered in hours). ``exact``: those hours can say it (every cut on an hour's
    start, one piece, within the neighbouring days)."""

    day: dt.date
    start: dt.datetime
    end: dt.datetime
    whole: bool
    hours: tuple[HourRange, ...]
    exact: bool


@dataclass(frozen=True)
class ZoneChange:
    """What the days the destination holds for a selection in other zones mean for a load in
    ``zone`` (``zone_change``): ``loaded``, every day held complete with its span; ``taken``, the
    dates held complete in another zone (not loaded in ``zone``: their rows are the old zone's);
    ``first``, the first date of ``zone`` after the last of them; and the days loaded incomplete in
    another zone: loaded again in ``zone`` (``reload``) or left (``stranded``: the days held
    complete around them cover every hour of theirs)."""

    zone: str
    old: tuple[str, ...]
    loaded: Mapping[dt.date, LoadedDay]
    taken: frozenset[dt.date] = frozenset()
    boundary: dt.datetime | None = None  # the end of the last day held in another zone
    last_old: dt.date | None = None
    first: dt.date | None = None
    reload: tuple[dt.date, ...] = ()
    stranded: tuple[dt.date, ...] = ()

    def span(self, day: dt.date) -> tuple[dt.datetime, dt.datetime] | None:
        """The UTC span ``day`` of ``zone`` holds among the days already held: its own, clipped
        where another held day has the hours, extended over the hours between it and a date held in
        another zone that no held day has. None: a date held in another zone, or every hour held."""
        if day in self.taken:
            return None
        natural = ServiceDay.of(day, self.zone)
        others = sorted((held.start, held.end) for date, held in self.loaded.items() if date != day)
        start, end = self._clipped(natural, others)
        if end <= start:
            return None
        start, end, _ = self._extended(day, natural, start, end, others)
        return start, end

    @staticmethod
    def _clipped(natural: ServiceDay, others: list) -> tuple[dt.datetime, dt.datetime]:
        """The day's own span less the held days' hours at its ends."""
        start, end = natural.start, natural.end
        for begins, ends in sorted(others):  # in order: clipping at one may reach the next
            if begins <= start < ends:
                start = ends
        for begins, ends in sorted(others, reverse=True):
            if begins < end <= ends:
                end = begins
        return start, end

    def _extended(
        self, day: dt.date, natural: ServiceDay, start: dt.datetime, end: dt.datetime, others: list
    ) -> tuple[dt.datetime, dt.datetime, bool]:
        """``start``/``end`` extended over the hours no held day has between this day and a held
        neighbouring date (another zone's, or a day fitted away from it), at most over that
        neighbour's day in ``zone``; and whether hours were left beyond that bound (in no day)."""
        one = dt.timedelta(days=1)
        left = False
        if start == natural.start and day - one in self.loaded:
            ended = [ends for _, ends in others if ends <= start]
            if ended and max(ended) < start:
                bound = ServiceDay.of(day - one, self.zone).start
                start, left = max(max(ended), bound), left or max(ended) < bound
        if end == natural.end and day + one in self.loaded:
            begun = [begins for begins, _ in others if begins >= end]
            if begun and min(begun) > end:
                bound = ServiceDay.of(day + one, self.zone).end
                end, left = min(min(begun), bound), left or min(begun) > bound
        return start, end, left

    def fit(self, day: dt.date, labels: dt.timedelta | None) -> ServiceDay | Transition | None:
        """``day`` as a load in ``zone`` counts it now: its own day, a ``Transition``, or None
        (``span``: nothing of it to load). ``labels``: the fixed offset the service labels hours
        with now (None: the zone's own hours)."""
        span = self.span(day)
        natural = ServiceDay.of(day, self.zone)
        if span is None:
            return None
        start, end = span
        if (start, end) == (natural.start, natural.end):
            return natural
        one = dt.timedelta(days=1)
        hours: list[HourRange] = []
        if start < natural.start:
            hours.append((day - one, start, natural.start))
        whole = start <= natural.start and end >= natural.end
        if not whole:
            hours.append((day, max(start, natural.start), min(end, natural.end)))
        if end > natural.end:
            hours.append((day + one, natural.end, end))
        cuts = [moment for moment in (start, end) if moment not in (natural.start, natural.end)]
        exact = all(_an_hours_start(moment, self.zone, labels) for moment in cuts)
        exact = exact and start >= ServiceDay.of(day - one, self.zone).start  # within the neighbours' series
        exact = exact and end <= ServiceDay.of(day + one, self.zone).end
        others = [(held.start, held.end) for date, held in self.loaded.items() if date != day]
        exact = exact and not self._extended(day, natural, *self._clipped(natural, others), others)[2]
        # another held day inside the span: two pieces, which one count cannot say
        exact = exact and not any(
            start < held.start < end or start < held.end < end for date, held in self.loaded.items() if date != day
        )
        return Transition(day, start, end, whole, tuple(hours), exact)


def _an_hours_start(moment: dt.datetime, zone: str, labels: dt.timedelta | None) -> bool:
    """Whether an hour's bucket of the service's hour series begins at ``moment``."""
    offset = labels if labels is not None else moment.astimezone(tz_of(zone)).utcoffset()
    local = moment + (offset or dt.timedelta(0))
    return local.minute == 0 and local.second == 0


def zone_change(loaded: Mapping[dt.date, LoadedDay], incomplete: Mapping[dt.date, str], zone: str) -> ZoneChange | None:
    """The zone change a load in ``zone`` meets, from the destination's days of the selection:
    ``loaded``, the days held complete (with their zone and span), and the days held incomplete
    with their zone. None when every day there is of ``zone``."""
    taken = frozenset(day for day, held in loaded.items() if held.zone != zone)
    stray = {day: name for day, name in incomplete.items() if name != zone}
    # A day fitted after an earlier change (not its zone's midnights) still bounds its neighbours,
    # also once the other zone's days were deleted (the documented way back to one zone).
    fitted = any(held != LoadedDay.of(day, held.zone) for day, held in loaded.items())
    if not taken and not stray and not fitted:
        return None
    old = tuple(sorted({loaded[day].zone for day in taken} | set(stray.values())))
    if not taken:  # nothing complete in another zone: its incomplete days are simply loaded in this one
        return ZoneChange(zone, old, loaded, reload=tuple(sorted(stray)))
    boundary = max(loaded[day].end for day in taken)
    last_old = max(taken)
    first = last_old + dt.timedelta(days=1)
    while ServiceDay.of(first, zone).end <= boundary:
        first += dt.timedelta(days=1)
    change = ZoneChange(zone, old, loaded, taken, boundary, last_old, first)
    ahead = tuple(sorted(day for day in stray if change.span(day) is not None))
    return ZoneChange(
        zone, old, loaded, taken, boundary, last_old, first,
        reload=ahead, stranded=tuple(sorted(day for day in stray if day not in ahead)),
    )  # fmt: skip


def hours_from(
    rows: Iterable[Mapping[str, Any]],
    boundary: dt.datetime,
    zone: str,
    labels: dt.timedelta | None,
    until: dt.datetime | None = None,
) -> int:
    """The clicks of a day's hour series (``"2026-10-10 09"`` rows, labelled with the fixed offset
    ``labels``, or ``zone``'s own hours) in the hours that begin at or after ``boundary`` (and
    before ``until``)."""
    total = 0
    for row in rows:
        value = str(row.get("value") or "")
        try:
            local = dt.datetime.strptime(value, "%Y-%m-%d %H")
        except ValueError:
            raise ValueError(
                f"a day asked alone answered the bucket {value!r}, not an hour ('YYYY-MM-DD HH')"
            ) from None
        begins = (local - labels).replace(tzinfo=UTC) if labels is not None else local.replace(tzinfo=tz_of(zone))
        if begins >= boundary and (until is None or begins < until):
            total += int(float(row.get("count") or 0))
    return total


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


def aware(value: Any, name: str) -> dt.datetime:
    """A datetime with a zone (pendulum's too), or an ISO string with an offset; else refused naming ``name``."""
    moment = value
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            moment = None
    if not isinstance(moment, dt.datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise LinkstatsInputError(name, value, "an aware datetime or an ISO 8601 string with an offset")
    # A plain datetime in UTC: pendulum's subclass keeps its own zone rules through arithmetic.
    return dt.datetime.fromtimestamp(moment.timestamp(), UTC)


def check_zone(zone: Any, name: str = "zone") -> str:
    try:
        tz_of(str(zone))
    except (ValueError, KeyError, OSError):
        raise LinkstatsInputError(name, zone, "an IANA time zone name such as 'America/New_York' or 'UTC'") from None
    return str(zone)


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
    start, end = aware(interval_start, "data_interval_start"), aware(interval_end, "data_interval_end")
    zone = check_zone(zone)
    if end < start:
        raise LinkstatsInputError("data_interval_end", end.isoformat(), f"not before data_interval_start ({start})")
    now = aware(now, "now")
    dates = sorted(set(days_ending_in(start, end, zone)) | set(reload))
    fitted = [change.fit(day, labels) if change is not None else ServiceDay.of(day, zone) for day in dates]
    covered = tuple(day for day, fit in zip(dates, fitted, strict=True) if fit is None)
    transitions = tuple(fit for fit in fitted if isinstance(fit, Transition))
    days = tuple(
        ServiceDay(fit.day, zone, fit.start, fit.end) if isinstance(fit, Transition) else fit
        for fit in fitted
        if fit is not None
    )
    for day in days:
        if day.start >= now:
            raise LinkstatsInputError(
                "data_interval_end",
                end.isoformat(),
                f"an interval whose days have begun: {day.day} in {zone} begins at {day.start:%Y-%m-%d %H:%M} UTC, "
                f"after the service's now ({now:%Y-%m-%d %H:%M:%S} UTC); a day in the future has no statistics yet",
            )
    read_after = now if complete_by is None else min(now, aware(complete_by, "complete_by"))
    incomplete = frozenset(day.day for day in days if day.end > read_after)
    return DayPlan(zone, days, incomplete, now.astimezone(tz_of(zone)).date(), now, labels, transitions, covered)


# -- only what changed -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counter:
    """A link's ``clicks`` counter as the load last saw it, and the earliest moment it is known
    to have held that value (it held it from then until the listing that read it); its alias then
    (a re-created link is a new id under a known alias)."""

    clicks: int
    steady_since: dt.datetime
    alias: str = ""


@dataclass(frozen=True)
class Listed:
    """A link as the listing showed it: its counter (None: not listed, its id was given) and alias."""

    clicks: int | None
    alias: str = ""

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Listed:
        return cls(int(record.get("clicks") or 0), str(record.get("alias") or ""))


def needs_request(clicks: int, known: Counter | None, first_day: ServiceDay) -> bool:
    """Whether a link with ``clicks`` now may have clicks on the days from ``first_day`` on, given
    what its selection saved (``known``; the selection has saved counters).

    No: its counter is unchanged and held before that day began, or it was never clicked since it
    was created (a link not seen before). A counter lower than saved was reset: yes.
    """
    return why_fetch(Listed(clicks), known, first_day, new_selection=False) is not None


def why_fetch(
    listed: Listed,
    known: Counter | None,
    first_day: ServiceDay,
    *,
    new_selection: bool,
    reused_alias_of: int | None = None,
) -> str | None:
    """Why a link needs a statistics request for the days from ``first_day`` on, or None.

    ``new_selection``: nothing saved for this selection (or only under another generation), so a
    counter proves nothing (0 may be a reset). ``reused_alias_of``: the id that had this link's
    alias in the saved counters (the link was deleted and re-created).
    """
    if listed.clicks is None:
        return "asked for by id"
    if new_selection:
        return "no counters saved for this selection"
    if reused_alias_of is not None:
        return f"re-created (its alias was link {reused_alias_of}'s)"
    if known is None:
        return "not seen before" if listed.clicks else None
    if listed.clicks < known.clicks:
        return f"counter went down ({known.clicks} to {listed.clicks}: reset or re-created)"
    if listed.clicks > known.clicks:
        return "new clicks"
    return None if known.steady_since <= first_day.start else "clicks possible since the first day began"


def links_to_fetch(listed: Mapping[int, Listed], known: Mapping[int, Counter], plan: DayPlan) -> dict[int, str]:
    """Of the links ``listed``, those that need a statistics request, with the reason (for the
    log), given the counters saved for the selection (``known``; empty for a new selection)."""
    first = plan.days[0]
    new_selection = not known
    aliases = {counter.alias: link_id for link_id, counter in known.items() if counter.alias}
    wanted = {}
    for link_id, link in listed.items():
        previous = aliases.get(link.alias) if link.alias and link_id not in known else None
        reason = why_fetch(
            link, known.get(link_id), first, new_selection=new_selection,
            reused_alias_of=previous if previous != link_id else None,
        )  # fmt: skip
        if reason is not None:
            wanted[link_id] = reason
    return wanted


def steady_since(
    clicks_listed_at: dt.datetime,
    counts: Mapping[dt.date, int],
    windows: Sequence[tuple[dt.date, dt.date]],
    plan: DayPlan,
    known: Mapping[dt.date, int | None] | None = None,
) -> dt.datetime:
    """The earliest moment a counter read at ``clicks_listed_at`` is known to have held its value,
    from a statistics answer ``counts`` (clicks per label) over ``windows``, asked after the listing,
    and the days' own counts where ``known`` (``DayPlan.day_counts``).

    When the last window reaches today, no click after the last day with clicks means the counter
    stood still since that day's end (or since the first day to load began, with no click at all).
    Otherwise only the listing's moment is known.
    """
    first, today = plan.days[0].day, plan.today
    if not windows or windows[-1][1] < today or ServiceDay.of(today, plan.zone).end < clicks_listed_at:
        return clicks_listed_at
    # A click of the first day may carry the label of the day before (labels in another offset).
    clicked = [day for day, count in counts.items() if count and day >= first - dt.timedelta(days=1)]
    if not clicked:
        return plan.days[0].start
    return min(plan.label_end(max(clicked), known), clicks_listed_at)


def first_day_found_short(
    clicks: int | None,
    known: Counter | None,
    answered: int,
    windows: Sequence[tuple[dt.date, dt.date]],
    plan: DayPlan,
) -> dt.date | None:
    """The first day to reload when a link's counter grew since it was last read by more clicks
    than the statistics answer holds from the first day to load through today (``answered``): the
    rest were counted on earlier days, after the counter was read, so an earlier run loaded those
    days without them (it ran before they came: a service clock behind, clicks recorded late) and
    may have marked them complete. They are the days from the one before the moment the counter
    was known steady since (clicks counted up to a day late).

    None when nothing is short, or when it cannot be told: no counter known, a counter that did
    not grow (one that went down is another matter), a last window short of today."""
    if clicks is None or known is None or not windows or windows[-1][1] < plan.today or not plan.days:
        return None
    if clicks - known.clicks <= answered:
        return None
    first = (known.steady_since - dt.timedelta(days=1)).astimezone(tz_of(plan.zone)).date()
    return first if first < plan.days[0].day else None


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


# -- the cost ----------------------------------------------------------------------------------------


def listing_pages(records: int, per_page: int = PAGE_SIZE) -> int:
    """Pages a listing of ``records`` takes (an empty listing still answers one page)."""
    return max(1, math.ceil(records / per_page))


def minimum_requests(
    *,
    listed: int | None = None,
    changed: int = 0,
    statistics: int = 1,
    windows: int = 1,
    websites: int = 0,
    breakdown_days: int = 0,
    alone: int = 0,
) -> int:
    """The fewest requests a run can make: the listing's pages when records are listed (``listed``
    records; an empty listing still answers one page), one request per changed record, statistic
    and window, one per website and statistic, one per record and day with clicks for a breakdown
    (its rows have no day), and one per record and day asked alone (``DayPlan.ask_alone``)."""
    pages = listing_pages(listed) if listed is not None else 0
    return pages + changed * statistics * windows + websites * statistics * windows + breakdown_days + alone


def selected_days(counts: Mapping[dt.date, int], days: Sequence[ServiceDay]) -> dict[dt.date, int]:
    """The counts of the days being loaded (a window may reach past them, to today)."""
    wanted = {day.day for day in days}
    return {day: count for day, count in counts.items() if day in wanted and count}


# -- the selection a load's state belongs to -----------------------------------------------------------


def selection_key(conn_id: str, filters: Mapping[str, Any], ids: Sequence[int] | None = None) -> str:
    """The selection a load reads, as its saved state is keyed: the service connection, the
    listing's filters, or the ids given. Canonical JSON (``{"conn":"linkstats_links_default",
    "space_id":"1"}``); over 200 characters (many ids), ``sha256:`` and its digest instead."""
    import hashlib
    import json

    # Values as text: a templated "1" and a literal 1 are one selection.
    chosen: dict[str, Any] = {"conn": str(conn_id), **{str(k): str(filters[k]).strip() for k in sorted(filters)}}
    if ids is not None:
        chosen["ids"] = sorted(int(i) for i in ids)
    text = json.dumps(chosen, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# -- the operator's arguments, checked before any request (``operators/warehouse.py``) ---------------


def checked_breakdown(breakdown: Any, names: Sequence[str]) -> str | None:
    """The statistic a breakdown loads (one of the resource's ``names``), or None for the daily counts."""
    from airflow_provider_linkstats.client.checks import is_blank

    if is_blank(breakdown):
        return None
    name = str(breakdown).strip()
    if name not in names:
        raise LinkstatsInputError("breakdown", breakdown, "one of " + ", ".join(names))
    return name


def run_interval(given_start: Any, given_end: Any, context: Mapping[str, Any], log: Any) -> tuple[Any, Any]:
    """The interval a run loads: the arguments, else the run's data interval (``context``)."""
    from airflow_provider_linkstats.client.checks import is_blank

    start = given_start if not is_blank(given_start) else context.get("data_interval_start")
    end = given_end if not is_blank(given_end) else context.get("data_interval_end")
    run_after = getattr(context.get("dag_run"), "run_after", None)
    if start is None and end is None and run_after is not None:
        # Airflow 3's manual trigger without a logical date (the UI's button, `airflow dags trigger`):
        # no data interval. Taken as an empty interval at the moment the run was due, so the run
        # loads the day that ended last before it (execute() says which, and why).
        log.info("this run has no data interval (a manual trigger without a logical date): it is "
                 "taken as the moment the run was due, %s", run_after)  # fmt: skip
        return run_after, run_after
    if start is None or end is None:
        raise LinkstatsInputError(
            "data_interval_start/data_interval_end", (start, end),
            "a run with a data interval (a scheduled or backfilled run), or both arguments given",
        )  # fmt: skip
    return start, end


def check_days_begun(start: Any, end: Any, now: dt.datetime) -> None:
    """Both ends aware moments, and the interval's last day begun in any zone (a day in the future has
    no statistics yet)."""
    end_moment = aware(end, "data_interval_end")
    aware(start, "data_interval_start")
    if end_moment - dt.timedelta(hours=26) > now:  # whatever the zone, its last day has not begun
        raise LinkstatsInputError(
            "data_interval_end", end_moment.isoformat(),
            f"an interval whose days have begun (it is {now:%Y-%m-%d %H:%M} UTC now): a day in the future has "
            "no statistics yet",
        )  # fmt: skip
