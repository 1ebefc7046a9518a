"""Only what changed: the links' counters as the last load saw them (``Counter``), which links need a
statistics request (``links_to_fetch``), when no counter can be trusted (``untrusted_counters``: one went down),
since when a counter stood still, the days an earlier run loaded short, and the fewest requests a run
can make (``minimum_requests``). No I/O.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.warehouse.days import ServiceDay, tz_of
from airflow_provider_linkstats.client.warehouse.plan import DayPlan


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
    """Whether a link with ``clicks`` now may have clicks on the days from ``first_day`` on, given the
    counter its selection saved (``known``): ``why_fetch`` for a selection with saved counters."""
    return why_fetch(Listed(clicks), known, first_day, new_selection=False) is not None


def why_fetch(
    listed: Listed,
    known: Counter | None,
    first_day: ServiceDay,
    *,
    new_selection: bool,
    reused_alias_of: int | None = None,
) -> str | None:
    """Why a link needs a statistics request for the days from ``first_day`` on, or None (the rules:
    docs/warehouse.md, "Counters that go down or restart"). ``new_selection``: nothing saved for this
    selection (or only under another generation); ``reused_alias_of``: the id that had this link's
    alias in the saved counters (the link was deleted and re-created)."""
    if listed.clicks is None:
        return "asked for by id"
    if new_selection:
        return "no counters saved for this selection"
    if reused_alias_of is not None:
        return f"re-created (its alias was link {reused_alias_of}'s)"
    if known is None:
        return "not seen before" if listed.clicks else None
    return _counter_change(listed, known, first_day)


def _counter_change(listed: Listed, known: Counter, first_day: ServiceDay) -> str | None:
    """Why a link seen before needs a request, from its alias and counter now and as saved."""
    if known.alias and listed.alias and known.alias != listed.alias:
        # Another link under this id (MySQL before 8.0 gives a deleted highest id again after a
        # restart) or an alias edited: its counter is not the one saved.
        return f"another alias ({known.alias!r} to {listed.alias!r}: the id given again, or renamed)"
    if listed.clicks < known.clicks:
        return f"counter went down ({known.clicks} to {listed.clicks}: reset or re-created)"
    if listed.clicks > known.clicks:
        return "new clicks"
    return None if known.steady_since <= first_day.start else "clicks possible since the first day began"


def untrusted_counters(listed: Mapping[int, Listed], known: Mapping[int, Counter]) -> str | None:
    """Why no counter of this listing can be trusted, or None: a link the last load saw reads a lower
    counter now, so counters were reset, and one reset and clicked as often since reads the same
    again (docs/warehouse.md, "A reset"): every link is fetched that run."""
    seen = [(link.clicks, known[link_id].clicks) for link_id, link in listed.items()
            if link.clicks is not None and link_id in known]  # fmt: skip
    down = sum(1 for now, before in seen if now < before)
    if not down:
        return None
    return f"{down} of the {len(seen)} counters the last load saw went down (a reset): none is trusted"


def links_to_fetch(
    listed: Mapping[int, Listed], known: Mapping[int, Counter], plan: DayPlan, untrusted: str | None = None
) -> dict[int, str]:
    """The links ``listed`` that need a statistics request, with the reason (for the log), given the
    counters saved (``known``; empty for a new selection) and ``untrusted`` (``untrusted_counters``)."""
    if untrusted is not None:
        return dict.fromkeys(listed, untrusted)
    first = plan.days[0]
    new_selection = not known
    aliases = {counter.alias: link_id for link_id, counter in known.items() if counter.alias}
    wanted = {}
    for link_id, link in listed.items():
        # Only a link not saved under its id takes another's alias (``aliases`` holds no empty one).
        previous = None if link_id in known else aliases.get(link.alias)
        reason = why_fetch(link, known.get(link_id), first, new_selection=new_selection, reused_alias_of=previous)
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
    """The earliest moment a counter read at ``clicks_listed_at`` is known to have held its value, from
    a statistics answer ``counts`` (clicks per label) over ``windows``, asked after the listing, and
    the days' own counts where ``known`` (``DayPlan.day_counts``): when the last window reaches today,
    the end of the last day with clicks (no click at all: the first day's start); else the listing's."""
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
    """The first day to reload when a link's counter grew since it was last read by more clicks than
    the answer holds from the first day to load through today (``answered``): the rest were counted
    late on days an earlier run loaded (docs/warehouse.md, "A day found short later"), from the day
    before the counter was known steady (clicks counted up to a day late). None when nothing is
    short, or it cannot be told (no counter known, one that did not grow, a window short of today)."""
    if clicks is None or known is None or not windows or windows[-1][1] < plan.today or not plan.days:
        return None
    if clicks - known.clicks <= answered:
        return None
    first = (known.steady_since - dt.timedelta(days=1)).astimezone(tz_of(plan.zone)).date()
    return first if first < plan.days[0].day else None


# -- the cost of a load ----------------------------------------------------------------------------

PAGE_SIZE = 100  # links per listing page (the largest per_page the services take)


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
