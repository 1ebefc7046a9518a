"""The one notion of a day the warehouse load has: ``ServiceDay``, a span of instants in the zone
the service counts days in (its date, the zone, and its UTC start and end). A day of the plan, a day
fitted between days loaded in another zone, a day the destination holds: each is a ``ServiceDay``,
its span its zone's midnights unless fitted (``ServiceDay.natural``). Also the zones' names and the
day rule's days (``days_ending_in``), and the checks of moments and zones. No I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.generations import ACCOUNT_OFFSET, ACCOUNT_ZONE, Generation

UTC = dt.timezone.utc
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
    """One calendar day of the service's statistics: its date, the zone, and the span of instants it
    counts (UTC bounds). Its zone's midnights (``of``), unless fitted between days loaded in another
    zone (``ZoneChange.fit``): the plan's days, the zone fit, completeness and the sinks all read
    this one value."""

    day: dt.date
    zone: str
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def of(cls, day: dt.date, zone: str, span: tuple[dt.datetime, dt.datetime] | None = None) -> ServiceDay:
        """``day`` of ``zone``: its midnights, or ``span`` (a fitted day's, as a sink keeps it)."""
        if span is not None:
            return cls(day, zone, span[0], span[1])
        tz = tz_of(zone)
        start = dt.datetime.combine(day, dt.time(), tz).astimezone(UTC)
        end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tz).astimezone(UTC)
        return cls(day, zone, start, end)

    @property
    def natural(self) -> bool:
        """Whether the span is its zone's midnights (not fitted after a zone change)."""
        own = ServiceDay.of(self.day, self.zone)
        return (self.start, self.end) == (own.start, own.end)

    @property
    def fitted_span(self) -> tuple[dt.datetime, dt.datetime] | None:
        """The UTC span a sink keeps with the day where it is not its zone's midnights, else None."""
        return None if self.natural else (self.start, self.end)

    def overlaps(self, other: ServiceDay) -> bool:
        return other.start < self.end and self.start < other.end


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
