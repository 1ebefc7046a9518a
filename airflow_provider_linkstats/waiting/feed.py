"""Expired links as a feed: each poll, the links that ended and were not reported before.

phpShort 44-45 list them under the Expired filter; 46+ list there only links that reached their
click limit, so there the walk reads the All listing and decides each record. A link whose window
has not started yet is not reported: deleting it would cancel a scheduled campaign.

The memory of what was reported holds only links still ended, plus those missing from the last walk
alone: deletes during a walk shift its later pages, so a link is forgotten once two walks missed it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.protocol import build_list
from airflow_provider_linkstats.client.records import link_timing
from airflow_provider_linkstats.waiting import plan
from airflow_provider_linkstats.waiting.plan import JsonDict, Plan, record_id, walk_pages

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.clock import ServiceClock


_DUMPED = (("listed", 0), ("missed_once", 1))  # dump()'s keys, by walks in a row that missed the link


class ExpiredFeed:
    """Ended links, minus what was already reported. Filters are validated on creation."""

    def __init__(self, filters: Mapping[str, Any] | None = None) -> None:
        given = {name: value for name, value in (filters or {}).items() if value not in (None, "")}
        # Oldest first: new expiries append at the end, so pages shift less while walking.
        order = {"sort_by": "id", "sort": "asc"}
        self.filters = {**given, "status": int(LinkStatus.EXPIRED), "per_page": MAX_PER_PAGE, **order}
        build_list(LINKS, self.filters)  # raises LinkstatsInputError naming a bad filter, before any request
        self.reported: dict[int, int] = {}  # link id -> walks in a row that did not list it (0 or 1)
        self.changed = False  # the memory changed in the last news(): worth saving

    def walk(self, dialect: Generation | None = None, clock: ServiceClock | None = None) -> Plan[list[JsonDict]]:
        """Every ended link the (filtered) listing holds. Where the walk decides (46+), by each page's
        own ``Date``; a page without one by the service's ``clock`` less its margin."""
        decide = not getattr(dialect, "lists_date_expiry", True)  # no dialect: the listing decides
        filters = {**self.filters, "status": int(LinkStatus.ALL)} if decide else self.filters
        records: list[JsonDict] = []
        answered: list[Any] = []

        def take(items: list[JsonDict]) -> bool:
            told = plan.answered_at(answered[-1]) if answered else None
            moment = dt.datetime.fromtimestamp(plan.service_time(clock) if told is None else told, dt.timezone.utc)
            records.extend(r for r in items if not decide or link_timing(r).ended(moment))
            return False

        yield from walk_pages(lambda page: build_list(LINKS, filters, page), take, answered)
        return records

    def news(self, records: list[JsonDict]) -> list[JsonDict]:
        """The records of a complete walk not reported before; they count as reported from now on."""
        current: dict[int, JsonDict] = {}
        for record in records:
            if (link_id := record_id(record)) is not None:
                current.setdefault(link_id, record)
        fresh = [record for link_id, record in current.items() if link_id not in self.reported]
        remembered = dict.fromkeys(current, 0)
        remembered.update({i: 1 for i, misses in self.reported.items() if i not in current and misses == 0})
        self.changed, self.reported = remembered != self.reported, remembered
        return fresh

    # -- persistence (asset_state_store on Airflow >= 3.3) -----------------------------------

    def dump(self) -> JsonDict:
        return {key: sorted(i for i, m in self.reported.items() if m == misses) for key, misses in _DUMPED}

    def load(self, value: Any) -> None:
        """Restore a ``dump()``; anything else (nothing stored yet, another shape) starts afresh."""
        if not isinstance(value, Mapping):
            return
        reported: dict[int, int] = {}
        for key, misses in _DUMPED:
            ids = value.get(key)
            if isinstance(ids, list):
                reported.update({i: misses for i in ids if isinstance(i, int) and not isinstance(i, bool)})
        self.reported = reported
