"""Expired links as a feed: each poll, the links of the Expired listing not reported before.

Real link records have no ``status`` field; the Expired listing (``status=2``) is how expiry is
observed. ``ExpiredFeed`` walks all of it (ceil(expired / 100) requests, oldest first, narrowed by
the optional ``search``/``search_by``/``domain_id``/``space_id`` filters) and compares it with what
it reported already. Without I/O: ``walk()`` is a generator driven by ``adrive``.

The memory of what was reported holds only links that are still Expired, plus those missing from
the last walk alone: a link deleted from an earlier page while a walk is under way (a cleanup run
deleting links as the watcher polls) shifts the later pages, so one walk may miss a link that
is still there. Forgetting it then would report it again on the next walk, so a reported link is
forgotten only once two walks in a row did not list it.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.expiry import record_id
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, build_list, parse_page, raise_for_status

JsonDict = dict[str, Any]
FILTERS = ("search", "search_by", "domain_id", "space_id")


class ExpiredFeed:
    """The Expired listing, minus what was already reported. Filters are validated on creation."""

    def __init__(self, filters: Mapping[str, Any] | None = None) -> None:
        given = {name: value for name, value in (filters or {}).items() if value is not None and value != ""}
        self.filters = {
            **given,
            "status": int(LinkStatus.EXPIRED),
            "per_page": MAX_PER_PAGE,
            "sort_by": "id",
            "sort": "asc",  # new expiries append at the end, so pages shift less while walking
        }
        build_list(LINKS, self.filters)  # raises LinkstatsInputError naming a bad filter, before any request
        self.reported: dict[int, int] = {}  # link id -> walks in a row that did not list it (0 or 1)
        self.changed = False  # the memory changed in the last news(): worth saving

    def walk(self) -> Generator[ApiRequest, ApiResponse, list[JsonDict]]:
        """Every page of the (filtered) Expired listing."""
        records: list[JsonDict] = []
        page_number = 1
        while True:
            request = build_list(LINKS, self.filters, page_number)
            response = yield request
            raise_for_status(request, response)
            page = parse_page(request, response, MAX_PER_PAGE)
            records += page.items
            if not page.has_next:
                return records
            page_number += 1

    def news(self, records: list[JsonDict]) -> list[JsonDict]:
        """The records of a complete walk not reported before; they count as reported from now on."""
        current: dict[int, JsonDict] = {}
        for record in records:
            link_id = record_id(record)
            if link_id is not None:
                current.setdefault(link_id, record)
        before = dict(self.reported)
        fresh = [record for link_id, record in current.items() if link_id not in self.reported]
        remembered: dict[int, int] = {}
        for link_id, misses in self.reported.items():
            if link_id in current:
                remembered[link_id] = 0
            elif misses == 0:
                remembered[link_id] = 1  # missed once: maybe a shifted page; forgotten if missed again
        for record in fresh:
            remembered[record_id(record)] = 0  # type: ignore[index]
        self.reported = remembered
        self.changed = remembered != before
        return fresh

    # -- persistence (asset_state_store on Airflow >= 3.3) -----------------------------------

    def dump(self) -> JsonDict:
        return {
            "listed": sorted(i for i, misses in self.reported.items() if misses == 0),
            "missed_once": sorted(i for i, misses in self.reported.items() if misses),
        }

    def load(self, value: Any) -> None:
        """Restore a ``dump()``; anything else (nothing stored yet, another shape) starts afresh."""
        if not isinstance(value, Mapping):
            return
        reported: dict[int, int] = {}
        for key, misses in (("listed", 0), ("missed_once", 1)):
            ids = value.get(key)
            if isinstance(ids, list):
                reported.update({i: misses for i in ids if isinstance(i, int) and not isinstance(i, bool)})
        self.reported = reported
