"""The cost of a load: the fewest requests a run can make (``minimum_requests``). No I/O."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence

from airflow_provider_linkstats.client.warehouse.days import ServiceDay

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
