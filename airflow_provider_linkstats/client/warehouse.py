"""The plan of a statistics load into a warehouse: which service days a run loads, and which
records need a statistics request. No I/O and no Airflow: ``operators/warehouse.py`` drives it.

**The day rule.** Each generation counts statistics' days in one zone (``Generation.stats_zone``:
UTC for phpShort 44-45 and phpAnalytics; for phpShort 46+ the UTC offset the account's zone has
when the statistics are asked, so its days are named like ``UTC-05:00``). A run whose data
interval is ``[start, end)`` loads the days of that zone that *end* in ``(start, end]``. Every day
belongs to exactly one of a schedule's back-to-back intervals (so a backfill loads each day once),
and a day is over by the time its run is due. An empty interval (a manual run on Airflow 3, whose
interval starts and ends at its logical date) loads the day that ended last before it: the days
ending in the day before its end. A day not over by the service's clock is loaded and
recorded as incomplete, and any later run of the same load reloads it; a day not begun is refused
before any request.

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
it). The counters are kept per selection (``sinks``).
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
    """The zone ``generation`` counts statistics' days in, for an account in ``account_zone``, asked at ``now``."""
    if generation.stats_zone == ACCOUNT_ZONE:
        return account_zone or "UTC"
    if generation.stats_zone == ACCOUNT_OFFSET:
        offset = now.astimezone(ZoneInfo(account_zone or "UTC")).utcoffset() or dt.timedelta(0)
        if not offset:
            return "UTC"
        minutes = int(abs(offset).total_seconds() // 60)
        return f"UTC{'-' if offset < dt.timedelta(0) else '+'}{minutes // 60:02d}:{minutes % 60:02d}"
    return generation.stats_zone


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
class DayPlan:
    """The days one run loads, in the bucketing zone, and which of them are not over yet."""

    zone: str
    days: tuple[ServiceDay, ...]
    incomplete: frozenset[dt.date]
    today: dt.date  # the service's current day in ``zone``
    now: dt.datetime

    @property
    def dates(self) -> list[dt.date]:
        return [day.day for day in self.days]

    def windows(self) -> list[tuple[dt.date, dt.date]]:
        """The ``from``/``to`` of the statistics requests per record covering every day to load.

        At most ``MAX_DAYS_PER_REQUEST`` days each; the last one reaches today when that stays
        within the limit, so its answer also says since when a counter stood still (``steady_since``).
        Days of a fixed offset (phpShort 46+) are selected by the service in the account's zone, whose
        offset may differ by an hour on those dates: those windows reach a day further each way.
        """
        if not self.days:
            return []
        margin = dt.timedelta(days=1 if OFFSET_ZONE.fullmatch(self.zone) else 0)
        first, last = self.days[0].day - margin, self.days[-1].day + margin
        today = self.today + margin
        windows = []
        while first <= last:
            to = min(last, first + dt.timedelta(days=MAX_DAYS_PER_REQUEST))
            windows.append((first, to))
            first = to + dt.timedelta(days=1)
        start, to = windows[-1]
        if to < today and (today - start).days <= MAX_DAYS_PER_REQUEST:
            windows[-1] = (start, today)
        return windows


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
) -> DayPlan:
    """The days a run of data interval ``[interval_start, interval_end)`` loads (the day rule),
    plus ``reload`` (days an earlier run loaded before they were over). A day that has not begun
    by ``now`` (the service's clock) is refused: nothing can be loaded for it yet."""
    start, end = aware(interval_start, "data_interval_start"), aware(interval_end, "data_interval_end")
    zone = check_zone(zone)
    if end < start:
        raise LinkstatsInputError("data_interval_end", end.isoformat(), f"not before data_interval_start ({start})")
    now = aware(now, "now")
    dates = sorted(set(days_ending_in(start, end, zone)) | set(reload))
    days = tuple(ServiceDay.of(day, zone) for day in dates)
    for day in days:
        if day.start >= now:
            raise LinkstatsInputError(
                "data_interval_end",
                end.isoformat(),
                f"an interval whose days have begun: {day.day} in {zone} begins at {day.start:%Y-%m-%d %H:%M} UTC, "
                f"after the service's now ({now:%Y-%m-%d %H:%M:%S} UTC); a day in the future has no statistics yet",
            )
    incomplete = frozenset(day.day for day in days if day.end > now)
    return DayPlan(zone, days, incomplete, now.astimezone(tz_of(zone)).date(), now)


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
) -> dt.datetime:
    """The earliest moment a counter read at ``clicks_listed_at`` is known to have held its value,
    from a statistics answer ``counts`` (clicks per day) over ``windows``, asked after the listing.

    When the last window reaches today, no click after the last day with clicks means the counter
    stood still since that day's end (or since the first day to load began, with no click at all).
    Otherwise only the listing's moment is known.
    """
    first, today = plan.days[0].day, plan.today
    if not windows or windows[-1][1] < today or ServiceDay.of(today, plan.zone).end < clicks_listed_at:
        return clicks_listed_at
    clicked = [day for day, count in counts.items() if count and first <= day <= today]
    if not clicked:
        return plan.days[0].start
    return min(ServiceDay.of(max(clicked), plan.zone).end, clicks_listed_at)


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
    listed: int = 0,
    changed: int = 0,
    statistics: int = 1,
    windows: int = 1,
    websites: int = 0,
    breakdown_days: int = 0,
) -> int:
    """The fewest requests a run can make: the listing's pages (when records are listed), one
    request per changed record, statistic and window, one per website and statistic, and one
    per record and day with clicks for a breakdown (its rows have no day)."""
    pages = listing_pages(listed) if listed else 0
    return pages + changed * statistics * windows + websites * statistics * windows + breakdown_days


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
