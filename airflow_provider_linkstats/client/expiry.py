"""Which watched links have expired: the plan the sensor and its trigger both follow, without I/O.

The service never says "link N is expired" directly (a record's ``status`` field is not in the
contract), so the plan reads the listing's Expired filter (``status=2``) at 100 per page:

- one link with a known alias: ``search_by=alias&search=<alias>``, matched by id, so a poke is
  one request however many links the account holds;
- a list of links: the whole Expired listing, page by page, stopping as soon as every watched id
  was seen, so a poke costs at most ceil(expired / 100) requests, never one per link.

A deleted link never shows up in that listing, so the wait alone would run into its timeout.
``ExpiryWatch`` therefore also reads ``GET /links/{id}`` when it learns the alias (or, for a
list, on the first poke that waits), and again on every Nth poke that finds the link not expired;
a 404 there raises ``LinkGoneError`` at once. More than a few pending links are first looked for
in the All listing (per page, not per link), and only those it misses are read one by one.

A poke is a generator: it yields each ``ApiRequest`` and receives its ``ApiResponse`` (or has the
transport's ``LinkstatsApiError`` thrown in), and returns a ``PokeOutcome``. ``drive`` runs one
with a synchronous ``call``; ``adrive`` with an async one, so both modes send the same
requests and read the answers the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.errors import LinkstatsApiError, LinkstatsInputError, LinkstatsNotFoundError
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    build_get,
    build_list,
    expired_links_request,
    natural_key_lookup,
    parse_page,
    parse_record,
    raise_for_status,
)
from airflow_provider_linkstats.client.settings import DEFAULT_EXISTENCE_CHECK_EVERY
from airflow_provider_linkstats.client.validation import (
    check_existence_check_every,
    is_blank,
    validate_id,
    validate_link_ids,
)

JsonDict = dict[str, Any]
Poke = Generator[ApiRequest, ApiResponse, "PokeOutcome"]
Outcome = TypeVar("Outcome")  # what a plan driven by ``adrive`` returns (a poke's, a fleet round's...)

EXISTENCE_GETS_MAX = 3  # more pending links than this are looked for in the listing, not one GET each


class LinkGoneError(LinkstatsNotFoundError):
    """A watched link does not exist (any more): waiting for it to expire would never end."""

    def __init__(self, link_id: int | None, message: str) -> None:
        self.link_id = link_id
        super().__init__(message, status=404)


@dataclass
class PokeOutcome:
    """What one poke learned: the expired records (in watched order) and the ids still waited for."""

    expired: list[JsonDict]
    pending: list[int]
    requests: int = 0
    checked_existence: bool = False

    @property
    def done(self) -> bool:
        return not self.pending


def walk_pages(
    request_for_page: Callable[[int], ApiRequest], take: Callable[[list[JsonDict]], bool]
) -> Generator[ApiRequest, ApiResponse, int]:
    """Yield the requests of a listing's pages until ``take(items)`` has seen enough or the pages
    run out; returns the number of requests. Every walk of the plan goes through here."""
    page_number = 1
    while True:
        request = request_for_page(page_number)
        response = yield request
        raise_for_status(request, response)
        page = parse_page(request, response, MAX_PER_PAGE)
        if take(page.items) or not page.has_next:
            return page_number
        page_number += 1


class ExpiredScan:
    """One walk of the Expired listing (status=2, per_page=100), narrowed to ``alias`` when given,
    stopping as soon as every watched id was seen: ``requests += yield from scan.walk()``."""

    def __init__(self, link_ids: Iterable[int], alias: str | None = None) -> None:
        self.wanted = list(dict.fromkeys(link_ids))
        self.alias = alias or None
        self.found: dict[int, JsonDict] = {}
        self.requests = 0

    def walk(self) -> Generator[ApiRequest, ApiResponse, int]:
        if not self.wanted:
            return 0
        made = yield from walk_pages(lambda page: expired_links_request(self.alias, page), self._take)
        self.requests += made
        return made

    def _take(self, items: list[JsonDict]) -> bool:
        wanted = set(self.wanted)
        self.found.update((i, item) for item in items if (i := record_id(item)) in wanted)
        return len(self.found) == len(wanted)

    @property
    def expired(self) -> list[JsonDict]:
        return [self.found[i] for i in self.wanted if i in self.found]

    @property
    def pending(self) -> list[int]:
        return [i for i in self.wanted if i not in self.found]


class ExpiryWatch:
    """The state of one wait across pokes: what is watched, the alias once known, pokes so far.

    Build it with ``from_inputs`` (which validates). It holds no key and no connection, so the
    sensor keeps one per task run and the trigger one per trigger run.
    """

    def __init__(
        self,
        link_ids: Iterable[int],
        alias: str | None = None,
        *,
        single: bool,
        existence_check_every: int = DEFAULT_EXISTENCE_CHECK_EVERY,
        verified: bool = False,
    ) -> None:
        self.link_ids = list(dict.fromkeys(link_ids))
        self.alias = alias or None
        self.single = single
        self.existence_check_every = existence_check_every
        self.verified = verified  # an existence check has already passed for this wait
        self.waiting_pokes = 0  # pokes that found the wait not over

    @classmethod
    def from_inputs(
        cls,
        *,
        link_id: Any = None,
        alias: Any = None,
        link_ids: Any = None,
        existence_check_every: Any = DEFAULT_EXISTENCE_CHECK_EVERY,
        verified: bool = False,
    ) -> ExpiryWatch:
        """Validate what a DAG gave (after template rendering) and build the watch.

        ``link_id`` may also be a link record (the XCom of a create task): its ``id`` is used,
        and its ``alias`` too when ``alias`` is not given. ``link_ids`` may hold records as well.
        """
        every = check_existence_check_every(existence_check_every)
        if is_blank(link_ids):
            link_ids = None
        if link_ids is not None:
            if not is_blank(link_id) or not is_blank(alias):
                given, value = ("link_id", link_id) if not is_blank(link_id) else ("alias", alias)
                raise LinkstatsInputError(given, value, "unset when link_ids is given")
            ids = validate_link_ids(link_ids)
            return cls(ids, None, single=False, existence_check_every=every, verified=verified)
        if isinstance(link_id, Mapping):
            record = link_id
            link_id = record.get("id")
            if is_blank(alias) and isinstance(record.get("alias"), str):
                alias = record["alias"]
        if is_blank(link_id) and is_blank(alias):
            raise LinkstatsInputError("link_id", link_id, "a link id, a link record, or an alias (or link_ids, a list)")
        ids = [] if is_blank(link_id) else [validate_id(link_id, "link_id")]
        if not is_blank(alias) and not isinstance(alias, str):
            raise LinkstatsInputError("alias", alias, "a non-empty string")
        alias = None if is_blank(alias) else alias.strip()
        return cls(ids, alias, single=True, existence_check_every=every, verified=verified)

    def describe(self) -> str:
        if not self.single:
            return f"{len(self.link_ids)} links"
        what = f"link {self.link_ids[0]}" if self.link_ids else "link"
        return f"{what} (alias {self.alias!r})" if self.alias else what

    def check_due(self) -> bool:
        """Whether a poke that finds the wait not over should also check that the links exist."""
        if not self.verified:
            return True
        every = self.existence_check_every
        return bool(every) and self.waiting_pokes % every == 0

    def poke(self, *, check_existence: bool | None = None) -> Poke:
        """One poke. ``check_existence`` overrides the every-Nth rule (reschedule mode counts pokes itself)."""
        requests = 0
        checked = False
        if self.single and not self.link_ids:
            requests += yield from self._resolve_id()
            checked = True
        elif self.single and self.alias is None:
            record = yield from self._get(self.link_ids[0])
            requests += 1
            self.alias = record.get("alias") if isinstance(record.get("alias"), str) and record["alias"] else None
            checked = True
        if checked:
            self.verified = True
        scan = ExpiredScan(self.link_ids, self.alias)
        requests += yield from scan.walk()
        outcome = PokeOutcome(scan.expired, scan.pending, requests, checked)
        if outcome.done:
            return outcome
        self.waiting_pokes += 1
        due = self.check_due() if check_existence is None else check_existence
        if due and not checked:
            outcome.requests += yield from self._check_existence(outcome.pending)
            outcome.checked_existence = True
            self.verified = True
        return outcome

    # -- steps ---------------------------------------------------------------------------------

    def _get(self, link_id: int) -> Generator[ApiRequest, ApiResponse, JsonDict]:
        request = build_get(LINKS, link_id)
        try:
            response = yield request
            raise_for_status(request, response)
        except LinkstatsNotFoundError:
            message = f"link {link_id} does not exist (GET {request.path} answered 404): deleted, or a wrong id"
            raise LinkGoneError(link_id, message) from None
        return parse_record(request, response)

    def _check_existence(self, pending: list[int]) -> Generator[ApiRequest, ApiResponse, int]:
        """Raise ``LinkGoneError`` if a pending link no longer exists; returns the requests made.

        A few links are read one by one. More are looked for in the All listing first (100 a page,
        newest first, stopping once all are seen), so the cost stays about pages, not links; the
        ones the walk missed (deleted, or skipped because the listing shifted under it) are then
        read one by one, so only a real 404 fails the wait.
        """
        requests = 0
        unseen = list(pending)
        if len(pending) > EXISTENCE_GETS_MAX:
            wanted, seen = set(pending), set[int | None]()

            def take(items: list[JsonDict]) -> bool:
                seen.update(record_id(item) for item in items)
                return wanted <= seen

            every_link = {"status": int(LinkStatus.ALL), "per_page": MAX_PER_PAGE}
            requests += yield from walk_pages(lambda page: build_list(LINKS, every_link, page), take)
            unseen = [i for i in pending if i not in seen]
        for link_id in unseen:
            record = yield from self._get(link_id)
            requests += 1
            self._verify_alias(link_id, record)
        return requests

    def _resolve_id(self) -> Generator[ApiRequest, ApiResponse, int]:
        """Only an alias was given: find the one link that has exactly it (any status)."""
        alias = self.alias or ""
        matches: list[JsonDict] = []

        def take(items: list[JsonDict]) -> bool:
            matches.extend(r for r in items if r.get("alias") == alias)
            return False  # every page: the alias may be on several domains

        requests = yield from walk_pages(lambda page: natural_key_lookup(LINKS, alias, page), take)
        if not matches:
            raise LinkGoneError(None, f"no link has the alias {alias!r}: it was deleted, or the alias is wrong")
        ids = sorted({record_id(r) for r in matches} - {None})  # type: ignore[type-var]
        if len(ids) != 1:
            allowed = f"an alias held by one link; links {ids} all have it (on different domains), so pass link_id"
            raise LinkstatsInputError("alias", alias, allowed)
        self.link_ids = ids  # type: ignore[assignment]
        return requests

    def _verify_alias(self, link_id: int, record: Mapping[str, Any]) -> None:
        if self.single and self.alias and isinstance(record.get("alias"), str) and record["alias"] != self.alias:
            allowed = f"the alias of link {link_id}, which is {record['alias']!r}; or give only one of them"
            raise LinkstatsInputError("alias", self.alias, allowed)


async def adrive(
    poke: Generator[ApiRequest, ApiResponse, Outcome], call: Callable[[ApiRequest], Awaitable[ApiResponse]]
) -> Outcome:
    """``drive`` with an async ``call`` (the trigger's): the same requests, the same reading."""
    try:
        request = next(poke)
        while True:
            try:
                response = await call(request)
            except LinkstatsApiError as error:
                request = poke.throw(error)
            else:
                request = poke.send(response)
    except StopIteration as stop:
        return stop.value


def drive(poke: Poke, call: Callable[[ApiRequest], ApiResponse]) -> PokeOutcome:
    """Run one poke synchronously: ``call`` sends a request (with retries) or raises."""
    try:
        request = next(poke)
        while True:
            try:
                response = call(request)
            except LinkstatsApiError as error:  # an error answer: the plan decides what it means
                request = poke.throw(error)
            else:
                request = poke.send(response)
    except StopIteration as stop:
        return stop.value


def record_id(record: Mapping[str, Any]) -> int | None:
    """A record's id as an int (the service may send it as a string)."""
    value = record.get("id")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


