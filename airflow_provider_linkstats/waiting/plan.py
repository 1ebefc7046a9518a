"""The steps every wait is made of, without I/O: the page walker, reads, the Expired listing.

Each is a plan (``client.protocol.Plan``: a generator that yields requests and returns what it
learnt), run by ``drive`` in a worker and ``adrive`` in the triggerer, so every mode sends the
same requests and reads the answers the same way; tests feed them canned answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError
from airflow_provider_linkstats.client.paging import PageGuard
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    Plan,
    build_get,
    build_list,
    parse_page,
    parse_record,
    raise_for_status,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.clock import ServiceClock

JsonDict = dict[str, Any]

GETS_MAX = 3  # more links than this are read from the All listing (per page), not one GET each
# The All listing oldest first: links created meanwhile append at the end, so pages shift less.
# Newest first suits links just created (what waits usually watch); there new links shift pages.
ALL_OLDEST_FIRST = {"status": int(LinkStatus.ALL), "per_page": MAX_PER_PAGE, "sort_by": "id", "sort": "asc"}
ALL_NEWEST_FIRST = {**ALL_OLDEST_FIRST, "sort": "desc"}


def now() -> float:
    """The worker's clock (epoch seconds): the waits' pace counts on it; ends are the service's."""
    return time.time()


def offset(clock: ServiceClock | None) -> float:
    """Seconds to add to ``now()`` to read the service's clock (learnt from the ``Date`` of its
    answers); 0 without a clock, where the worker's stands in."""
    return clock.offset if clock is not None else 0.0


def margin(clock: ServiceClock | None) -> float:
    """Seconds an end must be past, by the service's clock as measured, before a wait counts it as
    past (``ServiceClock.wait_margin``); 0 with no clock (a plan run on its own, in tests)."""
    return clock.wait_margin if clock is not None else 0.0


def service_time(clock: ServiceClock | None, worker: float | None = None) -> float:
    """The service's time at ``worker`` (default: now) less the margin: an end at or before it has
    passed by the service's clock, whichever way the measurement errs."""
    return (now() if worker is None else worker) + offset(clock) - margin(clock)


def clock_name(clock: ServiceClock | None) -> str:
    """The clock ends are judged by, for a log line: the service's as measured, else this worker's."""
    return clock.describe() if clock is not None else "this worker's clock"


def worker_time(clock: ServiceClock | None, end: float) -> float:
    """The worker's time at which the service's ``end`` counts as passed (``service_time``'s inverse)."""
    return end - offset(clock) + margin(clock)


def answered_at(response: ApiResponse | None) -> float | None:
    """The service's own time when it answered (its ``Date``, epoch seconds), or None without one:
    a wait decides that a link ended by it, never by an offset the answer in hand contradicts."""
    from airflow_provider_linkstats.client.clock import parse_http_date

    headers = getattr(response, "headers", None) or {}
    return parse_http_date(headers.get("date") or headers.get("Date"))


class LinkGoneError(LinkstatsNotFoundError):
    """A watched link does not exist (any more): waiting for it to expire would never end. The text
    leads with the fix, then names the connection and the request that told."""

    def __init__(
        self,
        link_id: int | None,
        message: str | None = None,
        *,
        alias: str | None = None,
        url: str = "",
        conn_id: str | None = None,
    ) -> None:
        self.link_id = link_id
        conn = f"connection {conn_id!r}" if conn_id else "the connection"
        if message is None:
            message = (
                f"Check link_id {link_id}, or whether the link was deleted: link {link_id} does not exist "
                f"on {conn} (GET {url or f'/links/{link_id}'} answered 404)"
                if link_id is not None
                else f"Check the alias {alias!r}, or whether the link was deleted: no link on {conn} has it "
                f"(GET {url or '/links?search_by=alias'} listed none)"
            )
        super().__init__(message)
        self.status, self.method, self.url, self.conn_id = 404, "GET", url, conn_id
        self.args = (self.message,)  # the message says it all (the 404, the URL, the connection)


def walk_pages(
    request_for_page: Callable[[int], ApiRequest],
    take: Callable[[list[JsonDict]], bool],
    answered: list[ApiResponse] | None = None,
) -> Plan[int]:
    """Yield a listing's pages until ``take(items)`` has seen enough or the pages run out; returns
    the pages read. Built from our own filters, never from ``links.next`` (real installs drop the
    status filter from it)."""
    page_number = 1
    guard = PageGuard(MAX_PER_PAGE)  # a listing whose paging lies (no meta, pages that repeat) still ends
    while True:
        request = request_for_page(page_number)
        response = yield request
        if answered is not None:
            answered.append(response)
        raise_for_status(request, response)
        page = parse_page(request, response, MAX_PER_PAGE)
        guard.read(page_number, page.items, url=response.url or request.describe(), total=page.total)
        if take(page.items) or not page.has_next:
            return page_number
        page_number += 1


@dataclass
class Pages:
    """What earlier walks of the All listing showed, so the next one starts close to what it wants:
    the first id of each page oldest first, and the newest id seen."""

    first_ids: dict[int, int] = field(default_factory=dict)
    newest: int | None = None

    def plan(self, wanted: list[int]) -> tuple[dict[str, Any], int]:
        """Filters and first page: newest first for links among the newest (and before a first
        walk), else oldest first from the page before the lowest id's (deletes shift pages down)."""
        low, high = min(wanted), max(wanted)
        if self.newest is None or self.newest - high < low:
            return ALL_NEWEST_FIRST, 1
        return ALL_OLDEST_FIRST, max(1, max((p for p, i in self.first_ids.items() if i <= low), default=1) - 1)

    def all_cost(self, wanted: list[int]) -> int:
        """About how many pages a walk of the All listing for ``wanted`` reads (ids one apart); a
        large number before the newest id is known."""
        filters, _ = self.plan(wanted)
        low, high = min(wanted), max(wanted)
        if self.newest is None:
            return 1 << 30
        if filters is ALL_NEWEST_FIRST:
            return -(-(self.newest - low + 1) // MAX_PER_PAGE)
        return -(-(high - low + 1) // MAX_PER_PAGE) + 1


def read_links(
    link_ids: Iterable[int],
    *,
    gets_max: int = GETS_MAX,
    pages: Pages | None = None,
    riders: Iterable[int] = (),
    missing: dict[int, LinkstatsNotFoundError] | None = None,
    dated: dict[int, float] | None = None,
) -> Plan[dict[int, JsonDict | None]]:
    """Each link's record, or None for one that does not exist: the one existence check.

    More than ``gets_max`` links are looked for in the All listing first, so the cost is pages, not
    links; only those it missed are read one by one, so nothing but a real 404 says a link is gone.
    ``riders`` on the walked pages come along at no extra request (one not seen is left out).
    ``missing`` collects each 404, ``dated`` the ``Date`` of the answer each record came in.
    """
    wanted = list(dict.fromkeys(link_ids))
    records: dict[int, JsonDict | None] = {}
    dates = dated if dated is not None else {}
    hints = pages if pages is not None else Pages()
    if wanted and hints.newest is not None and hints.newest - min(wanted) < MAX_PER_PAGE:
        gets_max = 1  # all on the first page newest first (unless links were created since): one request
    if len(wanted) > gets_max:
        yield from _walk_all(wanted, set(riders) - set(wanted), hints, records, dates)
    for link_id in wanted:  # those the walk did not find
        if link_id not in records:
            records[link_id] = yield from _read_one(link_id, hints, missing, dates)
    return records


def _walk_all(
    wanted: list[int], along: set[int], hints: Pages, records: dict[int, JsonDict | None], dates: dict[int, float]
) -> Plan[None]:
    remaining = set(wanted)
    answered: list[ApiResponse] = []
    filters, start = hints.plan(wanted)
    page = start - 1

    def take(items: list[JsonDict]) -> bool:
        nonlocal page
        page += 1
        ids = [i for item in items if (i := record_id(item)) is not None]
        if ids:
            hints.newest = max(hints.newest or 0, *ids)
            if filters is ALL_OLDEST_FIRST:
                hints.first_ids[page] = ids[0]
        date = answered_at(answered[-1]) if answered else None
        for item in items:
            if (i := record_id(item)) in remaining or i in along:
                records[i] = item  # type: ignore[index]
                remaining.discard(i)  # type: ignore[arg-type]
                if date is not None:
                    dates[i] = date  # type: ignore[index]
        return not remaining

    yield from walk_pages(lambda n: build_list(LINKS, filters, n + start - 1), take, answered)
    if remaining and filters is ALL_OLDEST_FIRST:
        hints.first_ids.clear()  # pages moved (or links are gone): the next walk starts at page 1 again


def _read_one(
    link_id: int, hints: Pages, missing: dict[int, LinkstatsNotFoundError] | None, dates: dict[int, float]
) -> Plan[JsonDict | None]:
    request = build_get(LINKS, link_id)
    try:
        response = yield request
        raise_for_status(request, response)
    except LinkstatsNotFoundError as error:
        if missing is not None:
            missing[link_id] = error
        return None
    record = parse_record(request, response)
    if (date := answered_at(response)) is not None:
        dates[link_id] = date
    hints.newest = max(hints.newest or 0, link_id)
    return record


def expired_listed(
    link_ids: Iterable[int], alias: str | None = None, *, max_pages: int | None = None
) -> Plan[tuple[dict[int, JsonDict], int]]:
    """The watched links the Expired listing (status=2) holds, and the pages read: narrowed to
    ``alias`` when given, stopping once every one was seen (or after ``max_pages``)."""
    wanted = set(link_ids)
    found: dict[int, JsonDict] = {}
    filters: JsonDict = {"status": int(LinkStatus.EXPIRED), "per_page": MAX_PER_PAGE}
    if alias:
        filters.update(search=alias, search_by="alias")
    read = 0

    def take(items: list[JsonDict]) -> bool:
        nonlocal read
        read += 1
        found.update((i, item) for item in items if (i := record_id(item)) in wanted)  # type: ignore[misc]
        return len(found) == len(wanted) or (max_pages is not None and read >= max_pages)

    pages = yield from walk_pages(lambda page: build_list(LINKS, filters, page), take)
    return found, pages


def record_id(record: Mapping[str, Any]) -> int | None:
    """A record's id as an int (the service may send a string)."""
    value = record.get("id")
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) else None
