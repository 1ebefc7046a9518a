"""The cleanup's decisions, without I/O: which links match, by which clock, when a page is read again,
and when a walk of the listing is not to be trusted (docs/cleanup.md tells the user's side).

``drivers.cleanup.StreamingCleanup`` reads the pages this plan asks for, feeds them in with the
service's "now" (``ServiceClock.settled_now()``: a moment that has passed by the service's clock
whichever way the measurement errs) and sends the deletes it returns. Tests feed canned pages.

The walk (``CleanupWalk``) is sorted by id ascending: **backward** (the last page first) when the
first page's ``meta`` tells a page count that agrees with its total, so a delete only moves records
of pages read already and ``below`` keeps any record from being handled twice; else **forward**,
each page from the offset of the records still listed. Every delete rests on fresh evidence
(``PagePlan``): a confirming read of the page right before its deletes, which deletes a link only
if it still matches, and only while that read is at most ``max_age`` seconds old.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_linkstats.client.checks import check_bool, check_choice, check_number, check_whole_number
from airflow_provider_linkstats.client.checks import not_given as is_blank
from airflow_provider_linkstats.client.contract import MAX_PER_PAGE
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.paging import PageGuard, UntrustedListingError
from airflow_provider_linkstats.client.records import link_timing, parse_timestamp, record_domain_id

# Seconds from a confirming read to the last delete it allows: a link renewed after the read is
# deleted only if its delete leaves within this window. At the real limit (60 requests a minute) a
# page of 100 expired links takes about 100 s of deletes, so its page is read about 7 more times.
DEFAULT_EVIDENCE_MAX_AGE = 15.0
# Without a Date header the service's clock is unknown: links within this many seconds of their end
# (by the worker's clock) are kept, whichever way the clocks differ (``margin_without_date``).
DEFAULT_MARGIN_WITHOUT_DATE = 3600.0
NAMED_MAX = 5  # links named in the log for each kind of "not deleted"; the rest are counted
ROUNDS_MAX = 1000  # confirming reads of one page at most (a page is read again only when a round made progress)

JsonDict = dict[str, Any]


# -- the rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupRules:
    """Which links a cleanup deletes, decided from each record at the service's settled now (the
    listing's filters only narrow the walk); every rule given must hold. ``expired``: over for good
    by ``link_timing(record).ended(now)`` (a 46+ window not started yet is not over); ``older_than``:
    ``created_at`` more than this before now (none: kept); ``search``: SQL LIKE in ``search_by``, as
    the service reads it; ``space_id`` (0: no space); ``domain_id``.
    """

    expired: bool = True
    older_than: dt.timedelta | None = None
    search: str | None = None
    search_by: str = "title"
    space_id: int | None = None
    domain_id: int | None = None

    def any(self) -> bool:
        given = (self.older_than, self.search, self.space_id, self.domain_id)
        return self.expired or any(value is not None for value in given)

    def listing_filters(self, lists_date_expiry: bool) -> JsonDict:
        """What to ask the listing for: every rule the server can apply, sorted by id ascending;
        ``status=2`` only where it means "ended by date or clicks" (44-45; on 46+ the records decide)."""
        filters: JsonDict = {"sort_by": "id", "sort": "asc", "per_page": MAX_PER_PAGE}
        if self.expired and lists_date_expiry:
            filters["status"] = 2
        if self.search is not None:
            filters.update(search=self.search, search_by=self.search_by)
        if self.space_id is not None:
            filters["space_id"] = self.space_id
        if self.domain_id is not None:
            filters["domain_id"] = self.domain_id
        return filters

    def failed_rule(self, record: JsonDict, now: dt.datetime) -> str | None:
        """The first rule the record does not meet (its argument's name), or None when it meets them all."""
        rules = (
            ("expired", self._ended),
            ("older_than_days", self._old_enough),
            ("search", self._found),
            ("space_id", self._in_space),
            ("domain_id", self._on_domain),
        )
        return next((rule for rule, holds in rules if not holds(record, now)), None)

    # Each rule: whether the record meets it (a rule not given is met).

    def _ended(self, record: JsonDict, now: dt.datetime) -> bool:
        return not self.expired or link_timing(record).ended(now)

    def _old_enough(self, record: JsonDict, now: dt.datetime) -> bool:
        if self.older_than is None:
            return True
        created = parse_timestamp(record.get("created_at"))  # a record without one is kept
        return created is not None and created < now - self.older_than

    def _found(self, record: JsonDict, now: dt.datetime) -> bool:
        return self.search is None or bool(_like(self.search).search(str(record.get(self.search_by) or "")))

    def _in_space(self, record: JsonDict, now: dt.datetime) -> bool:
        if self.space_id is None:
            return True
        found, space = _record_space(record)
        return found and (space == self.space_id or (self.space_id == 0 and space is None))  # 0: in no space

    def _on_domain(self, record: JsonDict, now: dt.datetime) -> bool:
        return self.domain_id is None or record_domain_id(record) == self.domain_id

    def describe(self) -> str:
        parts = ["expired"] if self.expired else []
        if self.older_than is not None:
            days = self.older_than.total_seconds() / 86400
            parts.append(f"created more than {days:g} day{'' if days == 1 else 's'} ago")
        if self.search is not None:
            parts.append(f"{self.search_by} like {self.search!r}")
        if self.space_id is not None:
            parts.append("in no space" if self.space_id == 0 else f"in space {self.space_id}")
        if self.domain_id is not None:
            parts.append(f"on domain {self.domain_id}")
        return ", ".join(parts)


def _like(needle: str) -> re.Pattern[str]:
    """SQL ``LIKE '%needle%'`` on a case-insensitive collation: ``%`` and ``_`` are wildcards."""
    parts = ["." if ch == "_" else ".*" if ch == "%" else re.escape(ch) for ch in needle]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def _record_space(record: JsonDict) -> tuple[bool, int | None]:
    """(whether the record tells its space, the space id or None for none)."""
    if "space" in record:
        space = record["space"]
        value = space.get("id") if isinstance(space, dict) else space
    elif "space_id" in record:
        value = record["space_id"]
    else:
        return False, None
    if value is None:
        return True, None
    try:
        return True, int(value)
    except (TypeError, ValueError):
        return False, None


def name(record: JsonDict) -> str:
    """``link 12 ('spring-a')`` for the log."""
    alias = record.get("alias")
    return f"link {record.get('id')}" + (f" ({alias!r})" if alias else "")


def decision_moment(settled_now: dt.datetime, answer_date: float, *, margin: float) -> dt.datetime:
    """The moment a page's records are judged at: ``settled_now`` (the clock's), but never later
    than the answer's own ``Date`` (epoch seconds) less ``margin``.

    The clock's offset is a belief learned from earlier answers; the answer in hand is the
    evidence. When the service's clock stepped back since the offset was learned, the answer's
    Date says so before the offset does: a link is judged over only if that answer says it ended."""
    told = dt.datetime.fromtimestamp(answer_date - margin, dt.timezone.utc)
    return min(settled_now, told)


# -- one page: found, confirmed, deleted ---------------------------------------------------------------


@dataclass
class Confirmation:
    """What one confirming read of a page decided."""

    delete: list[int] = field(default_factory=list)  # confirmed: send these before ``fresh_until``
    changed: list[tuple[JsonDict, str]] = field(default_factory=list)  # (record, the rule it no longer meets)
    moved: list[int] = field(default_factory=list)  # not on the page: moved to an earlier page, read there
    left: list[int] = field(default_factory=list)  # not on the page, not to be read again: left alone
    gone: list[int] = field(default_factory=list)  # not on the page after a delete sent whose answer was lost
    fresh_until: float = 0.0  # the driver's monotonic clock: no delete of ``delete`` leaves after it


class PagePlan:
    """One page of the walk: what its find read found, and the confirming reads that decide its deletes.

    ``candidates`` are the records that matched at their latest read and wait for a confirming
    one; they go back here when their delete was held past its evidence's freshness (``requeue``).
    """

    def __init__(self, walk: CleanupWalk, number: int) -> None:
        self.walk = walk
        self.number = number
        self.candidates: dict[int, JsonDict] = {}
        self.examined: set[int] = set()
        self.kept = 0  # did not match at their first read here
        self.listed_not_matching = 0  # of those, listed under a filter the server was asked to apply
        self.rounds = 0  # confirming reads so far
        self.handled: tuple[int | None, int] = (None, 0)  # the walk's ``below`` and ``seen_up_to`` before it
        self.left = 0  # candidates not on the page at a confirming read, not to be read again

    @property
    def pending(self) -> bool:
        return bool(self.candidates)

    def _examine(self, record: JsonDict, now: dt.datetime) -> None:
        record_id = record["id"]
        self.examined.add(record_id)
        failed = self.walk.rules.failed_rule(record, now)
        if failed is None:
            self.candidates[record_id] = record
            return
        if record_id in self.walk.counted:
            return  # kept already on the page before it (it moved here meanwhile)
        self.kept += 1
        if failed in self.walk.server_rules:
            self.listed_not_matching += 1

    def found(self, items: Iterable[JsonDict], now: dt.datetime) -> None:
        """The walk's read of this page: every record not handled yet is judged by the rules at ``now``."""
        for record in items:
            if record["id"] not in self.examined:
                self._examine(record, now)

    def confirm(self, items: Iterable[JsonDict], now: dt.datetime, sent_at: float) -> Confirmation:
        """A confirming read of the page, sent at ``sent_at`` (the driver's monotonic clock) and
        answered at ``now`` (the service's settled now): the candidates it shows still matching are
        to be deleted before ``sent_at + max_age``."""
        self.rounds += 1
        verdict = Confirmation(fresh_until=sent_at + self.walk.max_age)
        shown: dict[int, JsonDict] = {record["id"]: record for record in items}
        for record in shown.values():
            self._judge_shown(record, now, verdict)
        floor = min(shown) if shown else None
        for record_id in [i for i in self.candidates if i not in shown]:
            self._judge_missing(record_id, floor, verdict)
        self.left += len(verdict.left)
        return verdict

    def _judge_shown(self, record: JsonDict, now: dt.datetime, verdict: Confirmation) -> None:
        """A record the confirming read shows: a candidate deleted if it still matches, else kept and named."""
        record_id = record["id"]
        if record_id in self.candidates:
            del self.candidates[record_id]
            failed = self.walk.rules.failed_rule(record, now)
            if failed is None:
                verdict.delete.append(record_id)
            else:
                verdict.changed.append((record, failed))
        elif record_id not in self.examined:
            self._examine(record, now)  # new here (moved from an earlier page): found by this read

    def _judge_missing(self, record_id: int, floor: int | None, verdict: Confirmation) -> None:
        """A candidate the confirming read no longer shows: gone by its own delete, moved, or left alone."""
        if self.candidates.pop(record_id).get("unanswered"):
            verdict.gone.append(record_id)  # its own delete did it (the service's answer was lost)
            return
        # Sorted by id: a record missing below the page's first id moved to an earlier page,
        # which the backward walk reads next; one missing above it is gone (deleted meanwhile).
        below = self.walk.backward and floor is not None and record_id < floor
        if below and self.walk.open_below(self):
            self.examined.discard(record_id)
            verdict.moved.append(record_id)
        elif below and self.walk.hand_down(self, record_id):
            verdict.moved.append(record_id)  # the earlier page, read already, confirms it
        else:
            verdict.left.append(record_id)

    def requeue(self, records: Iterable[JsonDict]) -> None:
        """Deletes held past their evidence's freshness: they wait for another confirming read."""
        for record in records:
            self.candidates[record["id"]] = record


class CleanupWalk:
    """The order of the walk, what was handled, and whether the service's paging can be trusted.

    Built from the first page's answer (``items``, and what its ``meta`` told); ``guard`` stops a
    walk that would not end (``client.paging``). The driver asks ``next_number()`` for the page
    to read, hands each read to ``page()`` (the walk's read) and each confirming read to the
    ``PagePlan``, and says when a page is done (``done``).
    """

    def __init__(
        self,
        rules: CleanupRules,
        first: list[JsonDict],
        *,
        per_page: int,
        url: str,
        last_page: int | None = None,
        total: int | None = None,
        meta_per_page: int | None = None,
        server_rules: frozenset[str] = frozenset(),
        max_age: float = DEFAULT_EVIDENCE_MAX_AGE,
    ) -> None:
        self.rules = rules
        self.server_rules = server_rules
        self.max_age = max_age
        self.url = url
        self.size = max(meta_per_page or per_page, len(first))  # the service's page size
        self.guard = PageGuard(self.size, remember=4)  # ordered by id: a repeat shows among neighbours
        self.total = total
        # The page count is trusted only when it agrees with the total (a lying one reads empty
        # pages or misses records); else the forward walk, which needs neither.
        expected = math.ceil(total / self.size) if total is not None else None
        self.backward = last_page is not None and expected is not None and abs(last_page - max(expected, 1)) <= 1
        self.distrusted = last_page is not None and not self.backward
        self.first = first
        self._numbers = iter(range(last_page, 0, -1)) if self.backward and last_page else None
        self.below: int | None = None  # backward: every id at or above it is handled
        self.seen_up_to = 0  # forward: every id at or below it is handled
        self.counted: set[int] = set()  # ids kept on the page before (a record moved down is kept once)
        self.examined = 0  # records examined (forward: for the offset of the next page)
        self.removed = 0  # of those, deleted or found gone (forward: no longer listed)
        self.last_full = True
        self._next: int | None = 1
        self.latest: PagePlan | None = None  # the page read last (a backward walk hands it records: ``hand_down``)

    def next_number(self) -> int | None:
        """The page to read next, or None when the walk is over."""
        if self._numbers is not None:
            return next(self._numbers, None)
        if self._next is None:
            return None
        number, self._next = self._next, None
        return number

    def page(self, number: int, items: list[JsonDict], now: dt.datetime, *, total: int | None = None) -> PagePlan:
        """The walk's read of page ``number``: its records not handled yet, judged at ``now``."""
        self.guard.read(number, items, url=self.url, total=total if total is not None else self.total)
        plan = self.latest = PagePlan(self, number)
        plan.handled = (self.below, self.seen_up_to)  # what other pages handled: its own re-reads leave it out
        fresh = [record for record in items if self._unhandled(record["id"], plan)]
        if not self.backward and items and len(items) >= self.size and not fresh:
            raise UntrustedListingError(
                f"Check the service's paging (or a proxy in front of it): {self.url} answered page {number} with "
                f"{len(items)} rows all read before (sorted by id, each page should bring new ones); the cleanup "
                "stopped rather than read the same rows without end",
                self.url,
            )
        self.last_full = len(items) >= self.size
        plan.found(fresh, now)
        return plan

    def confirming(self, plan: PagePlan, items: list[JsonDict]) -> list[JsonDict]:
        """The records of a confirming read of ``plan``'s page that belong to it (not handled on
        another, or handed to it by the page after it: ``hand_down``)."""
        self.guard.read(plan.number, items, url=self.url, counted=False)
        return [r for r in items if r["id"] in plan.candidates or self._unhandled(r["id"], plan)]

    def hand_down(self, plan: PagePlan, record_id: int) -> bool:
        """A later confirming read of ``plan``'s page no longer shows a candidate below its first id:
        it moved to the earlier page, read already (a backward walk reads it while this page's
        deletes run). It becomes a candidate there, for that page's confirming reads to decide;
        False when no earlier page is in hand (``plan`` is the last read)."""
        taker = self.latest
        if taker is None or taker is plan or taker.number >= plan.number:
            return False
        taker.candidates[record_id] = {"id": record_id, "handed": True}
        return True

    def open_below(self, plan: PagePlan) -> bool:
        """Whether a record that left ``plan``'s page for an earlier one will still be read there."""
        return plan.rounds == 1 and self.backward and plan.number > 1

    def _unhandled(self, record_id: int, plan: PagePlan) -> bool:
        below, seen_up_to = plan.handled
        if self.backward:
            return below is None or record_id < below
        return record_id > seen_up_to

    def settle(self, plan: PagePlan) -> None:
        """What ``plan``'s page holds is known (its first confirming read, or its walk read when none
        is needed): the backward walk's next page leaves out what it handled. The driver calls it
        before reading the next page; ``done`` calls it again (idempotent)."""
        self.counted = set(plan.examined)
        if self.backward and plan.examined:
            # A record that moved to an earlier page was dropped from ``examined``: it stays below.
            self.below = min(plan.examined) if self.below is None else min(self.below, min(plan.examined))

    def done(self, plan: PagePlan, *, removed: int) -> None:
        """``plan``'s page is handled: ``removed`` of its records are no longer listed."""
        self.examined += len(plan.examined)
        self.removed += removed
        self.settle(plan)
        if self.backward:
            return
        if plan.examined:
            self.seen_up_to = max(self.seen_up_to, max(plan.examined))
        if self.last_full:
            # Records still listed before the next unseen one: the next page starts at that offset.
            self._next = max(self.examined - self.removed, 0) // self.size + 1


# -- the operator's arguments, checked before any request (``operators/cleanup.py``) -----------------

SEARCH_BY_CHOICES = ("title", "alias", "url")
SAMPLE_MAX = 100
MARGINS_WITHOUT_DATE = "a number of seconds from 0 to 86400 (a day)"
EVIDENCE_AGES = "seconds from 1 to 3600 (default 15)"


def checked_rules(
    *, expired: Any, older_than_days: Any, search: Any, search_by: Any, space_id: Any, domain_id: Any
) -> CleanupRules:
    """The rules, checked (each error names its argument and what is allowed), before any request."""
    older_than = None
    if not is_blank(older_than_days):
        days = check_number("older_than_days", older_than_days, allowed="a number of days >= 0, or None")
        older_than = dt.timedelta(days=days)  # counted back from the service's "now" at each decision
    rules = CleanupRules(
        expired=check_bool("expired", expired),
        older_than=older_than,
        search=None if is_blank(search) else str(search),
        search_by=check_choice("search_by", search_by, SEARCH_BY_CHOICES),
        space_id=None
        if is_blank(space_id)
        else check_whole_number("space_id", space_id, allowed="a space id, or 0 for no space"),
        domain_id=None if is_blank(domain_id) else check_whole_number("domain_id", domain_id, minimum=1),
    )
    if not rules.any():
        raise LinkstatsInputError(
            "expired",
            expired,
            "True, or at least one other rule (older_than_days, search, space_id, domain_id): a cleanup "
            "without any rule would delete every link",
        )
    return rules


@dataclass(frozen=True)
class CleanupLimits:
    """How much one run may delete and how: the safety and pace arguments, checked before any request
    (``checked``); the driver (``drivers.cleanup.StreamingCleanup``) takes them as they are named."""

    dry_run: bool
    max_deletes: int | None
    max_share: float | None
    max_workers: int
    sample_size: int
    evidence_max_age: float
    margin_without_date: float

    @classmethod
    def checked(
        cls,
        *,
        dry_run: Any,
        max_deletes: Any,
        max_share: Any,
        max_workers: Any,
        sample_size: Any,
        evidence_max_age: Any,
        margin_without_date: Any,
        pool_size: int,
    ) -> CleanupLimits:
        dry = check_bool("dry_run", dry_run)
        deletes = None
        if not is_blank(max_deletes):
            deletes = check_whole_number("max_deletes", max_deletes, allowed="a whole number >= 0, or None")
        share = None
        if not is_blank(max_share):
            share = check_number("max_share", max_share, allowed="a share of all links from 0 to 1, or None")
            if share > 1:
                raise LinkstatsInputError("max_share", max_share, "a share of all links from 0 to 1, or None")
        workers = check_whole_number("max_workers", max_workers, minimum=1, maximum=pool_size)
        sample = check_whole_number("sample_size", sample_size, maximum=SAMPLE_MAX)
        evidence = check_number("evidence_max_age", evidence_max_age, allowed=EVIDENCE_AGES)
        if not 1 <= evidence <= 3600:
            raise LinkstatsInputError("evidence_max_age", evidence_max_age, EVIDENCE_AGES)
        without_date = check_number("margin_without_date", margin_without_date, allowed=MARGINS_WITHOUT_DATE)
        if not 0 <= without_date <= 86400:
            raise LinkstatsInputError("margin_without_date", margin_without_date, MARGINS_WITHOUT_DATE)
        return cls(dry, deletes, share, workers, sample, evidence, without_date)

    def as_kwargs(self) -> dict[str, Any]:
        return asdict(self)
