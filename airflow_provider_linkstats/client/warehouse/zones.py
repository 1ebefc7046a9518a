"""The account's zone changed: the days the destination holds in another zone, and each day of the
new zone fitted between them (``ZoneChange.fit``), as the package's docstring tells. No I/O.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.warehouse.days import UTC, ServiceDay, tz_of

# One range of an hour series: (the day asked alone, from, to): its hours that begin in [from, to).
HourRange = tuple[dt.date, dt.datetime, dt.datetime]


ONE_DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Transition:
    """A day of ``zone`` fitted between days loaded complete in another zone: its ``span`` is not
    its own midnights (clipped where another day holds the hours, extended over the hours no loaded
    day holds next to a date another zone holds). Its clicks: the day's own count if ``whole`` (from
    the windows), plus the ``hours`` ranges of the days asked alone (a day asked alone is answered in
    hours). ``exact``: those hours can say it (every cut on an hour's start, one piece, within the
    neighbouring days)."""

    span: ServiceDay
    whole: bool
    hours: tuple[HourRange, ...]
    exact: bool

    @property
    def day(self) -> dt.date:
        return self.span.day

    @property
    def start(self) -> dt.datetime:
        return self.span.start

    @property
    def end(self) -> dt.datetime:
        return self.span.end

    @classmethod
    def of(cls, span: ServiceDay, exact: bool) -> Transition:
        """The hour ranges a fitted ``span`` is counted from: the day before's hours it reaches
        into, its own hours when it is not whole, the day after's."""
        natural = ServiceDay.of(span.day, span.zone)
        hours: list[HourRange] = []
        if span.start < natural.start:
            hours.append((span.day - ONE_DAY, span.start, natural.start))
        whole = span.start <= natural.start and span.end >= natural.end
        if not whole:
            hours.append((span.day, max(span.start, natural.start), min(span.end, natural.end)))
        if span.end > natural.end:
            hours.append((span.day + ONE_DAY, natural.end, span.end))
        return cls(span, whole, tuple(hours), exact)


@dataclass(frozen=True)
class ZoneChange:
    """What the days the destination holds for a selection in other zones mean for a load in
    ``zone`` (``zone_change``): ``loaded``, every day held complete (its span); ``taken``, the
    dates held complete in another zone (not loaded in ``zone``: their rows are the old zone's);
    ``first``, the first date of ``zone`` after the last of them; and the days loaded incomplete in
    another zone: loaded again in ``zone`` (``reload``) or left (``stranded``: the days held
    complete around them cover every hour of theirs)."""

    zone: str
    old: tuple[str, ...]
    loaded: Mapping[dt.date, ServiceDay]
    taken: frozenset[dt.date] = frozenset()
    boundary: dt.datetime | None = None  # the end of the last day held in another zone
    last_old: dt.date | None = None
    first: dt.date | None = None
    reload: tuple[dt.date, ...] = ()
    stranded: tuple[dt.date, ...] = ()

    def span(self, day: dt.date) -> ServiceDay | None:
        """``day`` of ``zone`` as it fits among the days already held: its own span, clipped where
        another held day has the hours, extended over the hours between it and a date held in
        another zone that no held day has. None: a date held in another zone, or every hour held."""
        fitted = self._fitted(day)
        return fitted[0] if fitted is not None else None

    def fit(self, day: dt.date, labels: dt.timedelta | None) -> ServiceDay | Transition | None:
        """``day`` as a load in ``zone`` counts it now: its own day, a ``Transition``, or None
        (``span``: nothing of it to load). ``labels``: the fixed offset the service labels hours
        with now (None: the zone's own hours)."""
        fitted = self._fitted(day)
        if fitted is None:
            return None
        span, hours_left_out = fitted
        if span.natural:
            return span
        return Transition.of(span, not hours_left_out and self._countable(span, labels))

    def _others(self, day: dt.date) -> list[ServiceDay]:
        """The held days but ``day``'s, by their start."""
        others = (held for date, held in self.loaded.items() if date != day)
        return sorted(others, key=lambda held: (held.start, held.end))

    def _fitted(self, day: dt.date) -> tuple[ServiceDay, bool] | None:
        """``span``, and whether hours next to it were left beyond its neighbours' days (in no day)."""
        if day in self.taken:
            return None
        natural = ServiceDay.of(day, self.zone)
        others = self._others(day)
        clipped = _clipped(natural, others)
        if clipped is None:
            return None
        start, left_before = self._reach_back(clipped, natural, others)
        end, left_after = self._reach_forward(clipped, natural, others)
        return dataclasses.replace(clipped, start=start, end=end), left_before or left_after

    def _reach_back(self, span: ServiceDay, natural: ServiceDay, others: list[ServiceDay]) -> tuple[dt.datetime, bool]:
        """The start moved back over the hours no held day has, to the held day before it, at most
        over the day before in ``zone``; and whether hours were left beyond that bound."""
        if span.start != natural.start or span.day - ONE_DAY not in self.loaded:
            return span.start, False
        ended = max((held.end for held in others if held.end <= span.start), default=None)
        if ended is None or ended >= span.start:
            return span.start, False
        bound = ServiceDay.of(span.day - ONE_DAY, self.zone).start
        return max(ended, bound), ended < bound

    def _reach_forward(
        self, span: ServiceDay, natural: ServiceDay, others: list[ServiceDay]
    ) -> tuple[dt.datetime, bool]:
        """The end moved on over the hours no held day has, as ``_reach_back`` does the start."""
        if span.end != natural.end or span.day + ONE_DAY not in self.loaded:
            return span.end, False
        begun = min((held.start for held in others if held.start >= span.end), default=None)
        if begun is None or begun <= span.end:
            return span.end, False
        bound = ServiceDay.of(span.day + ONE_DAY, self.zone).end
        return min(begun, bound), begun > bound

    def _countable(self, span: ServiceDay, labels: dt.timedelta | None) -> bool:
        """Whether the hour series can count ``span``: each cut on an hour's start, within the
        neighbouring days' series, and no other held day inside it (two pieces one count cannot say)."""
        natural = ServiceDay.of(span.day, self.zone)
        cuts = [moment for moment in (span.start, span.end) if moment not in (natural.start, natural.end)]
        if not all(_an_hours_start(moment, self.zone, labels) for moment in cuts):
            return False
        before, after = ServiceDay.of(span.day - ONE_DAY, self.zone), ServiceDay.of(span.day + ONE_DAY, self.zone)
        if span.start < before.start or span.end > after.end:
            return False
        return not any(
            span.start < held.start < span.end or span.start < held.end < span.end for held in self._others(span.day)
        )


def _clipped(natural: ServiceDay, others: list[ServiceDay]) -> ServiceDay | None:
    """The day's own span less the held days' hours at its ends (None: nothing left)."""
    start, end = natural.start, natural.end
    for held in others:  # by their start: clipping at one may reach the next
        if held.start <= start < held.end:
            start = held.end
    for held in sorted(others, key=lambda held: (held.start, held.end), reverse=True):
        if held.start < end <= held.end:
            end = held.start
    return dataclasses.replace(natural, start=start, end=end) if start < end else None


def _an_hours_start(moment: dt.datetime, zone: str, labels: dt.timedelta | None) -> bool:
    """Whether an hour's bucket of the service's hour series begins at ``moment``."""
    offset = labels if labels is not None else moment.astimezone(tz_of(zone)).utcoffset()
    local = moment + (offset or dt.timedelta(0))
    return local.minute == 0 and local.second == 0


def zone_change(
    loaded: Mapping[dt.date, ServiceDay], incomplete: Mapping[dt.date, str], zone: str
) -> ZoneChange | None:
    """The zone change a load in ``zone`` meets, from the destination's days of the selection:
    ``loaded``, the days held complete (with their zone and span), and the days held incomplete
    with their zone. None when every day there is of ``zone``."""
    taken = frozenset(day for day, held in loaded.items() if held.zone != zone)
    stray = {day: name for day, name in incomplete.items() if name != zone}
    if not taken:  # nothing complete in another zone: its incomplete days are simply loaded in this one
        # A day fitted after an earlier change (not its zone's midnights) still bounds its neighbours,
        # also once the other zone's days were deleted (the documented way back to one zone).
        if not stray and all(held.natural for held in loaded.values()):
            return None
        return ZoneChange(zone, tuple(sorted(set(stray.values()))), loaded, reload=tuple(sorted(stray)))
    old = tuple(sorted({loaded[day].zone for day in taken} | set(stray.values())))
    boundary = max(loaded[day].end for day in taken)
    change = ZoneChange(zone, old, loaded, taken, boundary, max(taken), _first_after(max(taken), boundary, zone))
    return _with_stray_days(change, sorted(stray))


def _with_stray_days(change: ZoneChange, stray: list[dt.date]) -> ZoneChange:
    """The days loaded incomplete in another zone: loaded again where a span of them is left, else
    stranded (the days held complete around them cover every hour of theirs)."""
    ahead = tuple(day for day in stray if change.span(day) is not None)
    return dataclasses.replace(change, reload=ahead, stranded=tuple(day for day in stray if day not in ahead))


def _first_after(last_old: dt.date, boundary: dt.datetime, zone: str) -> dt.date:
    """The first date of ``zone`` after ``last_old`` that ends after ``boundary``."""
    first = last_old + ONE_DAY
    while ServiceDay.of(first, zone).end <= boundary:
        first += ONE_DAY
    return first


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
