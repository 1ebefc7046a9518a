"""Many waits, one poll: the plan a shared poller follows for every link waited on, without I/O.

A triggerer may hold a thousand deferred sensors on one connection. Polled one by one they cost a
thousand requests per interval; yet one walk of the Expired listing (``status=2``, 100 a page)
answers for all of them. ``Fleet`` holds every waiter (one per trigger) and plans one *round* at
a time:

- **Expiry**: one walk of the Expired listing, ceil(expired / 100) requests, stopping early once
  every watched link was seen; or, when only a few links are watched and all their aliases are
  known, one filtered request per alias (``search_by=alias``), whichever costs fewer requests.
  What the last full walk cost is the estimate for the next choice.
- **Existence** (a deleted link never shows up as Expired): checked for the whole fleet at once,
  every ``existence_check_every`` rounds (the smallest among the waiters), and at once for waiters
  whose links were never checked. Few links are read one by one (``GET /links/{id}``); more are
  looked for in the All listing and only the ones it misses are read. A check spends at most
  ``EXISTENCE_REQUESTS_PER_ROUND`` requests per round and carries on in the next round, so a round
  never costs more than the expiry step plus that.

A round is a generator like ``ExpiryWatch.poke``: it yields ``ApiRequest``s, receives
``ApiResponse``s (or the transport's errors thrown in) and returns a ``RoundResult``; ``adrive``
runs it. A transient error ends the round (the caller counts it as a failed poll for every
waiter) and leaves the fleet as it was, so the next round simply starts over.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.errors import LinkstatsApiError, LinkstatsInputError, LinkstatsNotFoundError
from airflow_provider_linkstats.client.expiry import EXISTENCE_GETS_MAX, ExpiredScan, record_id
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    build_get,
    build_list,
    parse_page,
    parse_record,
    raise_for_status,
)

JsonDict = dict[str, Any]
Step = Generator[ApiRequest, ApiResponse, Any]

EXISTENCE_REQUESTS_PER_ROUND = 2  # the most an existence check adds to one round


@dataclass(eq=False)
class Waiter:
    """One wait as the fleet sees it: the links, and their aliases when known.

    As with the single trigger, every round looks for all of a waiter's links (a link whose expiry
    was extended meanwhile is no longer expired), and the wait is over when all are listed at once.

    ``alias_given`` is set for a single link watched with both an id and an alias: the existence
    check then also verifies that the alias belongs to that id, as the single trigger does.
    """

    link_ids: list[int]
    aliases: dict[int, str] = field(default_factory=dict)
    existence_check_every: int = 10
    verified: bool = False
    alias_given: bool = False
    pending: list[int] = field(default_factory=list)  # not in the Expired listing at the last round

    def __post_init__(self) -> None:
        self.pending = list(self.link_ids)


@dataclass
class RoundResult:
    """What a round decided, per waiter: finished (all expired), gone, or a wrong alias."""

    expired: dict[Waiter, list[JsonDict]] = field(default_factory=dict)
    gone: dict[Waiter, tuple[int, str]] = field(default_factory=dict)
    wrong_alias: dict[Waiter, str] = field(default_factory=dict)
    requests: int = 0
    mode: str = "idle"  # "walk", "filtered" or "idle" (nothing watched)


class Fleet:
    """Every waiter of one connection, and what the rounds learnt about the listing."""

    def __init__(self) -> None:
        self.waiters: list[Waiter] = []
        self.expired_pages: int | None = None  # what the last full walk of the Expired listing cost
        self.rounds_since_check = 0
        self._check: Step | None = None  # an existence check under way (spans rounds)
        self._check_request: ApiRequest | None = None
        self._check_ids: list[int] = []

    def add(self, waiter: Waiter) -> None:
        self.waiters.append(waiter)

    def remove(self, waiter: Waiter) -> None:
        if waiter in self.waiters:
            self.waiters.remove(waiter)

    # -- one round ---------------------------------------------------------------------------------

    def round(self) -> Generator[ApiRequest, ApiResponse, RoundResult]:
        result = RoundResult()
        watched = list(dict.fromkeys(i for w in self.waiters for i in w.link_ids))
        if not watched:
            return result
        found = yield from self._expiry_step(watched, result)
        for waiter in self.waiters:
            waiter.pending = [i for i in waiter.link_ids if i not in found]
            if not waiter.pending:
                result.expired[waiter] = [found[i] for i in waiter.link_ids]
        waiting = [w for w in self.waiters if w not in result.expired]
        self.rounds_since_check += 1
        yield from self._existence_step(waiting, result)
        return result

    def _expiry_step(self, watched: list[int], result: RoundResult) -> Generator[ApiRequest, ApiResponse, dict]:
        aliases = {i: a for w in self.waiters for i, a in w.aliases.items()}
        walk_cost = self.expired_pages or 1
        found: dict[int, JsonDict] = {}
        if all(i in aliases for i in watched) and len(watched) <= walk_cost:
            result.mode = "filtered"
            for link_id in watched:
                scan = ExpiredScan([link_id], aliases[link_id])
                result.requests += yield from scan.walk()
                found.update(scan.found)
            return found
        result.mode = "walk"
        scan = ExpiredScan(watched)
        result.requests += yield from scan.walk()
        if scan.pending:  # the walk went to the last page: its cost is the listing's size
            self.expired_pages = scan.requests
        else:
            self.expired_pages = max(self.expired_pages or 0, scan.requests)
        return scan.found

    def _existence_step(self, waiting: list[Waiter], result: RoundResult) -> Generator[ApiRequest, ApiResponse, None]:
        if self._check is None:
            every = [w.existence_check_every for w in waiting if w.existence_check_every > 0]
            due = [w for w in waiting if not w.verified]
            if every and self.rounds_since_check >= min(every):
                due = [w for w in waiting if not w.verified or w.existence_check_every > 0]
            if not due:
                return
            self._check_ids = list(dict.fromkeys(i for w in due for i in w.pending))
            self._check = check_existence(self._check_ids)
            self._check_request = next(self._check)
            self.rounds_since_check = 0
        records: dict[int, JsonDict | None] | None = None
        spent = 0
        while records is None and spent < EXISTENCE_REQUESTS_PER_ROUND:
            assert self._check is not None and self._check_request is not None
            spent += 1
            try:
                response = yield self._check_request
            except LinkstatsApiError as error:
                try:
                    self._check_request = self._check.throw(error)
                except StopIteration as stop:
                    records = stop.value
                except BaseException:
                    self._check = None  # started afresh next round
                    raise
            else:
                try:
                    self._check_request = self._check.send(response)
                except StopIteration as stop:
                    records = stop.value
                except BaseException:
                    self._check = None
                    raise
        result.requests += spent
        if records is None:
            return  # carries on next round
        self._check = None
        checked = set(self._check_ids)
        for waiter in waiting:
            if not checked.issuperset(waiter.pending):
                continue  # joined after the check started: the next check covers it
            gone = [i for i in waiter.pending if records.get(i) is None]
            if gone:
                result.gone[waiter] = (gone[0], gone_message(gone[0]))
                continue
            if waiter.alias_given:
                (link_id,) = waiter.link_ids
                actual = (records[link_id] or {}).get("alias")
                alias = waiter.aliases.get(link_id)
                if isinstance(actual, str) and alias and actual != alias:
                    allowed = f"the alias of link {link_id}, which is {actual!r}; or give only one of them"
                    result.wrong_alias[waiter] = str(LinkstatsInputError("alias", alias, allowed))
                    continue
            waiter.verified = True


def check_existence(link_ids: Iterable[int]) -> Generator[ApiRequest, ApiResponse, dict[int, JsonDict | None]]:
    """Each link's record, or None for one that does not exist (a GET answered 404).

    More than a few links are first looked for in the All listing (oldest first, so links created
    meanwhile do not shift the pages), and only those it missed are read one by one.
    """
    wanted = list(dict.fromkeys(link_ids))
    records: dict[int, JsonDict | None] = {}
    if len(wanted) > EXISTENCE_GETS_MAX:
        remaining, page_number = set(wanted), 1
        filters = {"status": int(LinkStatus.ALL), "per_page": MAX_PER_PAGE, "sort_by": "id", "sort": "asc"}
        while True:
            request = build_list(LINKS, filters, page_number)
            response = yield request
            raise_for_status(request, response)
            page = parse_page(request, response, MAX_PER_PAGE)
            for item in page.items:
                item_id = record_id(item)
                if item_id in remaining:
                    records[item_id] = item
                    remaining.discard(item_id)
            if not remaining or not page.has_next:
                break
            page_number += 1
    for link_id in wanted:
        if link_id in records:
            continue
        request = build_get(LINKS, link_id)
        try:
            response = yield request
            raise_for_status(request, response)
        except LinkstatsNotFoundError:
            records[link_id] = None
            continue
        records[link_id] = parse_record(request, response)
    return records


def gone_message(link_id: int) -> str:
    return f"link {link_id} does not exist (GET /links/{link_id} answered 404): deleted, or a wrong id"
