"""Long runs over the links service: the streaming cleanup's walk and its progress lines.

Outside ``operators/`` (whose modules import only ``operators.base``): the cleanup operator and
the bulk delete both use it, and it is imported only when a task runs.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsError

# -- progress: the rate of the last seconds, never above the budget ---------------------------------


def budget_pace(limiter: Any) -> float | None:
    """Requests a second the service's budget allows (``limit / window``), or None while unknown."""
    limit, window = getattr(limiter, "limit", None), getattr(limiter, "window", None)
    if not limit or not window:
        return None
    return float(limit) / float(window)


class Progress:
    """Rate and time left of a long run, from a sliding window of its last seconds.

    The rate is the work done over the last ``window`` seconds (at least two samples apart), not
    since the start: a burst at the start (a rate limiter lets the first half of a window's budget
    go at once) or a slow first page no longer colours every later line. It is capped by ``pace``,
    the rate limiter's budget (requests a second): no line promises more than the service allows.
    ``clock`` is injectable for tests.
    """

    def __init__(
        self, *, pace: float | None = None, window: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.pace = pace
        self.window = window
        self.clock = clock
        self.samples: deque[tuple[float, int]] = deque()
        self.samples.append((clock(), 0))

    def update(self, done: int) -> None:
        """Record that ``done`` units are finished now."""
        now = self.clock()
        self.samples.append((now, done))
        # Keep one sample at or before the window's start, so the window always spans it.
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window:
            self.samples.popleft()

    @property
    def rate(self) -> float:
        """Units a second over the window, at most ``pace``; 0.0 until time has passed."""
        (first_at, first_done), (last_at, last_done) = self.samples[0], self.samples[-1]
        elapsed = last_at - first_at
        rate = (last_done - first_done) / elapsed if elapsed > 0 else 0.0
        return min(rate, self.pace) if self.pace else rate

    def seconds_left(self, remaining: float) -> float | None:
        """Time for ``remaining`` more units at ``rate`` (the budget's pace while no rate is known)."""
        if remaining <= 0:
            return 0.0
        rate = self.rate or self.pace
        return remaining / rate if rate else None

    def line(self, done: int, total: int, failed: int, noun: str) -> str:
        """``deleted 300/1200 links (5.0/s, about 3 min left)``."""
        parts = [f"{self.rate:.1f}/s"]
        left = self.seconds_left(total - done)
        if done < total and left is not None:
            parts.append(f"about {_duration(left)} left")
        if failed:
            parts.append(f"{failed} failed")
        return f"deleted {done - failed}/{total} {noun} ({', '.join(parts)})"


def progress_line(done: int, total: int, elapsed: float, failed: int, noun: str, *, pace: float | None = None) -> str:
    """``deleted 300/1200 links (1.0/s, about 15 min left)`` for a run that did ``done`` in ``elapsed``
    seconds at an even rate: one window spanning the whole run, capped by the budget's ``pace``."""
    clock = iter((0.0, elapsed))
    progress = Progress(pace=pace, window=max(elapsed, 1.0), clock=lambda: next(clock))
    progress.update(done)
    return progress.line(done, total, failed, noun)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# -- the streaming cleanup: walk the listing, decide from each record, delete as it goes ------------


@dataclass(frozen=True)
class CleanupRules:
    """Which links a cleanup deletes, decided from each record (the listing's filters only narrow the walk).

    ``expired``: the link is over for good by the provider's own reading of its record, whatever
    the generation (``link_timing(record).ended``: its end time passed, or its click limit was
    reached; a phpShort 46+ window that has not started yet is not over). ``created_before``: its
    ``created_at`` is earlier (a record without one is kept). ``search`` (SQL LIKE, as the service
    reads it: case-insensitive, ``%`` and ``_`` wildcards) in ``search_by``; ``space_id`` (0: no
    space); ``domain_id``. Every rule given must hold.
    """

    expired: bool = True
    created_before: dt.datetime | None = None
    search: str | None = None
    search_by: str = "title"
    space_id: int | None = None
    domain_id: int | None = None

    def any(self) -> bool:
        given = (self.created_before, self.search, self.space_id, self.domain_id)
        return self.expired or any(value is not None for value in given)

    def listing_filters(self, lists_date_expiry: bool) -> dict[str, Any]:
        """What to ask the listing for: every rule the server can apply, sorted by id ascending.

        ``status=2`` only where the generation's filter means "ended by date or clicks" (44-45);
        phpShort 46+'s does not, so there the walk covers all links and the records decide.
        """
        from airflow_provider_linkstats.client.contract import MAX_PER_PAGE

        filters: dict[str, Any] = {"sort_by": "id", "sort": "asc", "per_page": MAX_PER_PAGE}
        if self.expired and lists_date_expiry:
            filters["status"] = 2
        if self.search is not None:
            filters.update(search=self.search, search_by=self.search_by)
        if self.space_id is not None:
            filters["space_id"] = self.space_id
        if self.domain_id is not None:
            filters["domain_id"] = self.domain_id
        return filters

    def matches(self, record: dict[str, Any], now: dt.datetime) -> bool:
        return self.failed_rule(record, now) is None

    def failed_rule(self, record: dict[str, Any], now: dt.datetime) -> str | None:
        """The first rule the record does not meet (its argument's name), or None when it meets them all."""
        from airflow_provider_linkstats.client.records import link_timing, parse_timestamp, record_domain_id

        if self.expired and not link_timing(record).ended(now):
            return "expired"
        if self.created_before is not None:
            created = parse_timestamp(record.get("created_at"))
            if created is None or created >= self.created_before:
                return "created_before"
        if self.search is not None and not _like(self.search).search(str(record.get(self.search_by) or "")):
            return "search"
        if self.space_id is not None:
            found, space = _record_space(record)
            if not found or (space != self.space_id and not (self.space_id == 0 and space is None)):
                return "space_id"
        if self.domain_id is not None and record_domain_id(record) != self.domain_id:
            return "domain_id"
        return None

    def describe(self) -> str:
        parts = ["expired"] if self.expired else []
        if self.created_before is not None:
            parts.append(f"created before {self.created_before.isoformat(timespec='seconds')}")
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


def _record_space(record: dict[str, Any]) -> tuple[bool, int | None]:
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


@dataclass
class ListingPage:
    items: list[dict[str, Any]]
    last_page: int | None  # from the answer's meta; None when the service did not say
    total: int | None


class ListingReader:
    """Reads one page of a links listing at a time, with the page count and total the answer tells."""

    def __init__(self, client: Any, filters: dict[str, Any]) -> None:
        self.client = client
        self.filters = filters
        self.pages_read = 0

    def read(self, number: int) -> ListingPage:
        import json

        from airflow_provider_linkstats.client.contract import LINKS
        from airflow_provider_linkstats.client.protocol import build_list, parse_page

        request = build_list(LINKS, self.filters, number)
        response = self.client.call(request)
        self.pages_read += 1
        page = parse_page(request, response, self.filters.get("per_page", 10))
        try:
            meta = json.loads(response.body).get("meta")
        except (ValueError, AttributeError):
            meta = None
        meta = meta if isinstance(meta, dict) else {}
        last, total = meta.get("last_page"), meta.get("total")
        return ListingPage(
            page.items,
            last if isinstance(last, int) and last >= 1 else None,
            total if isinstance(total, int) and total >= 0 else None,
        )


class CeilingError(LinkstatsError):
    """More links match than the cleanup may delete (``max_deletes``, ``max_share``)."""


@dataclass
class CleanupOutcome:
    """Counts and a bounded sample: what the task returns (its XCom), whatever the number of links."""

    dry_run: bool
    rules: str
    matched: int = 0  # records that met every rule (deleted, already gone, failed, or would go)
    deleted: int = 0
    already_gone: int = 0
    failed: int = 0
    kept: int = 0  # listed but not matching the rules: left alone
    listed_not_matching: int = 0  # of ``kept``: in a listing filtered for the rules, so the server's filter was wrong
    pages: int = 0
    total_links: int | None = None
    ceiling: int | None = None
    over_ceiling: bool = False
    sample_ids: list[int] = field(default_factory=list)
    first_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_xcom(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


class StreamingCleanup:
    """Walks a links listing and deletes the records ``rules`` match as it goes.

    The walk reads page 1 (for the page count), then the last page back to page 2, then page 1's
    records: a delete only moves records of later pages, which were read already, so no record is
    skipped and no page is read twice (``ceil(listed / 100)`` page requests). Records are sorted by
    id, so one that moved onto an earlier page (another client deleted something meanwhile) is
    recognised by its id and not handled twice. A listing that tells no page count is walked
    forward instead, each page read after its deletes are answered, from the offset of the records
    still listed.

    Memory holds one page, the deletes in flight and the counts: nothing grows with the number of
    links. A run killed half-way can simply run again: the links it deleted are no longer listed,
    so no answered delete is sent twice.
    """

    SAMPLE_MAX = 100
    FAILURES_IN_A_ROW = 20  # a cause that fails every delete (a revoked permission) stops the run
    LOG_EVERY = 10.0  # seconds between progress lines

    def __init__(
        self,
        hook: Any,
        rules: CleanupRules,
        *,
        dry_run: bool = False,
        max_deletes: int | None = None,
        max_share: float | None = None,
        max_workers: int,
        sample_size: int = 20,
        log: logging.Logger,
        now: dt.datetime | None = None,
    ) -> None:
        self.hook = hook
        self.rules = rules
        self.dry_run = dry_run
        self.max_deletes = max_deletes
        self.max_share = max_share
        self.max_workers = max_workers
        self.sample_size = min(sample_size, self.SAMPLE_MAX)
        self.log = log
        self.now = now or dt.datetime.now(dt.timezone.utc)

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> CleanupOutcome:
        started = time.monotonic()
        client = self.hook.client
        filtered = self.rules.expired and _lists_date_expiry(self.hook)
        filters = self.rules.listing_filters(filtered)
        # The rules the listing was asked to apply: a record listed that fails one shows a wrong filter.
        self._server_rules = {"expired"} if filtered else set()
        self._server_rules.update(k for k in ("search", "space_id", "domain_id") if k in filters)
        reader = ListingReader(client, filters)
        outcome = CleanupOutcome(dry_run=self.dry_run, rules=self.rules.describe())
        first = reader.read(1)
        outcome.total_links, outcome.ceiling = self._ceiling(first, filters)
        self.log.info(
            "cleanup of links matching: %s; %s listed (%s page(s) of %d); ceiling %s%s",
            outcome.rules,
            "?" if first.total is None else f"{first.total:,}",
            "?" if first.last_page is None else f"{first.last_page:,}",
            filters["per_page"],
            "none" if outcome.ceiling is None else f"{outcome.ceiling:,}",
            " (dry run: nothing is deleted)" if self.dry_run else "",
        )
        ceiling = outcome.ceiling
        if ceiling is not None and not self.dry_run and (first.total is None or first.total > ceiling):
            # More are listed than may go: count the matches first, so that an over-ceiling run
            # stops before its first delete rather than part-way.
            counted = CleanupOutcome(dry_run=True, rules=outcome.rules)
            self._walk(reader, first, counted, delete=False)
            if counted.matched > ceiling:
                outcome.matched, outcome.pages = counted.matched, reader.pages_read
                raise self._over_ceiling(outcome, counted.matched, before_any=True)
            self.log.info("%s links match, within the ceiling of %s: deleting", f"{counted.matched:,}", f"{ceiling:,}")
        self._walk(reader, first, outcome, delete=not self.dry_run)
        outcome.pages = reader.pages_read
        outcome.seconds = round(time.monotonic() - started, 3)
        if self.dry_run and ceiling is not None and outcome.matched > ceiling:
            outcome.over_ceiling = True
        self.log.info(
            "cleanup %s in %.1f s: %s matched, %s deleted, %s already gone, %s failed, %s kept; %s page(s) read",
            "dry run finished" if self.dry_run else "finished",
            outcome.seconds,
            f"{outcome.matched:,}",
            f"{outcome.deleted:,}",
            f"{outcome.already_gone:,}",
            f"{outcome.failed:,}",
            f"{outcome.kept:,}",
            f"{outcome.pages:,}",
        )
        if outcome.listed_not_matching:
            self.log.warning(
                "the service listed %s link(s) under the cleanup's filters that their own records do not match "
                "(%s); they were kept. Its listing filter is not to be trusted on this install.",
                f"{outcome.listed_not_matching:,}",
                outcome.rules,
            )
        return outcome

    def _ceiling(self, first: ListingPage, filters: dict[str, Any]) -> tuple[int | None, int | None]:
        """(links in the account, the most this run may delete) from ``max_deletes`` and ``max_share``."""
        total_links = None
        if self.max_share is not None:
            narrowed = any(k in filters for k in ("status", "search", "space_id", "domain_id"))
            total_links = first.total if not narrowed else None
            if total_links is None:
                total_links = self._count_all_links()
        limits = []
        if self.max_deletes is not None:
            limits.append(self.max_deletes)
        if self.max_share is not None and total_links is not None:
            limits.append(int(self.max_share * total_links))
        return total_links, (min(limits) if limits else None)

    def _count_all_links(self) -> int:
        """The account's links: one small listing request (its meta's total), or a walk if it has none."""
        from airflow_provider_linkstats.client.contract import MAX_PER_PAGE, PER_PAGE_CHOICES

        page = ListingReader(self.hook.client, {"per_page": min(PER_PAGE_CHOICES)}).read(1)
        if page.total is not None:
            return page.total
        reader = ListingReader(self.hook.client, {"per_page": MAX_PER_PAGE})
        count, number = 0, 1
        while True:
            items = reader.read(number).items
            count += len(items)
            if len(items) < MAX_PER_PAGE:
                return count
            number += 1

    def _over_ceiling(self, outcome: CleanupOutcome, matched: int, *, before_any: bool) -> CeilingError:
        limits = []
        if self.max_deletes is not None:
            limits.append(f"max_deletes={self.max_deletes:,}")
        if self.max_share is not None:
            limits.append(f"max_share={self.max_share} of {outcome.total_links:,} links")
        where = "before any delete" if before_any else f"after {outcome.deleted:,} deletes, before the next"
        return CeilingError(
            f"Raise max_deletes or max_share, or narrow the rules, to delete more: the cleanup stopped {where}: "
            f"{matched:,} links match ({outcome.rules}), more than its ceiling of {outcome.ceiling:,} "
            f"({', '.join(limits)}). A dry run (dry_run=True) lists what would go."
        )

    # -- the walk -------------------------------------------------------------------------------

    def _walk(self, reader: ListingReader, first: ListingPage, outcome: CleanupOutcome, *, delete: bool) -> None:
        deleter = _Deleter(self, outcome) if delete else None
        listed = first.total
        examined = 0
        progress = Progress(pace=budget_pace(getattr(self.hook.client, "limiter", None)))
        last_line = time.monotonic()
        try:
            for items in self._pages(reader, first, outcome, deleter):
                for record in items:
                    examined += 1
                    failed = self.rules.failed_rule(record, self.now)
                    if failed is not None:
                        outcome.kept += 1
                        if failed in self._server_rules:
                            outcome.listed_not_matching += 1
                        continue
                    outcome.matched += 1
                    if deleter is None:
                        self._sample(outcome, record["id"])
                    else:
                        deleter.submit(record["id"])
                if deleter is not None:
                    deleter.collect(block=False)
                if time.monotonic() - last_line >= self.LOG_EVERY:
                    last_line = time.monotonic()
                    self._progress_line(progress, outcome, examined, listed, reader)
        finally:
            if deleter is not None:
                deleter.close()
        if deleter is not None and outcome.failed:
            outcome.first_failures = deleter.first_failures

    def _pages(
        self, reader: ListingReader, first: ListingPage, outcome: CleanupOutcome, deleter: _Deleter | None
    ) -> Iterator[list[dict[str, Any]]]:
        """The records to examine, page by page, each once (see the class's docstring)."""
        if first.last_page is not None:
            below = None  # ids at or above it were handled on a later page
            for number in range(first.last_page, 1, -1):
                items = [r for r in reader.read(number).items if below is None or r["id"] < below]
                if items:
                    below = min(r["id"] for r in items)
                yield items
            yield [r for r in first.items if below is None or r["id"] < below]
            return
        per_page = reader.filters["per_page"]
        page, seen_up_to, number = first, 0, 1
        while True:
            items = [r for r in page.items if r["id"] > seen_up_to]
            if items:
                seen_up_to = max(r["id"] for r in items)
            yield items
            if len(page.items) < per_page:
                return
            if deleter is not None:
                deleter.collect(block=True)  # the offset of the next record depends on what was deleted
            still_listed = outcome.kept + outcome.failed  # of the records seen, those not deleted
            number = still_listed // per_page + 1
            page = reader.read(number)

    def _sample(self, outcome: CleanupOutcome, record_id: int) -> None:
        if len(outcome.sample_ids) < self.sample_size:
            outcome.sample_ids.append(record_id)

    def _progress_line(
        self, progress: Progress, outcome: CleanupOutcome, examined: int, listed: int | None, reader: ListingReader
    ) -> None:
        done = outcome.deleted + outcome.already_gone + outcome.failed if not self.dry_run else outcome.matched
        progress.update(done)
        left = ""
        if listed:
            share = outcome.matched / examined if examined else 1.0
            remaining = max(0, listed - examined) * share + (outcome.matched - done)
            seconds = progress.seconds_left(remaining)
            if seconds is not None and remaining > 0:
                left = f", about {_duration(seconds)} left"
        verb = "would delete" if self.dry_run else "deleted"
        self.log.info(
            "%s %s of %s matching links, %s of %s listed examined, %s page(s) read (%.1f/s%s)",
            verb,
            f"{done:,}",
            f"{outcome.matched:,}",
            f"{examined:,}",
            "?" if listed is None else f"{listed:,}",
            f"{reader.pages_read:,}",
            progress.rate,
            left,
        )


class _Deleter:
    """Deletes on a bounded thread pool sharing the hook's client (one session and rate limiter).

    At most ``max_pending`` deletes are in flight (a semaphore, released as each is answered), so
    memory stays bounded; answers queue up as they come and are counted on the walking thread.
    """

    def __init__(self, cleanup: StreamingCleanup, outcome: CleanupOutcome) -> None:
        import threading

        self.cleanup = cleanup
        self.outcome = outcome
        self.pool = ThreadPoolExecutor(max_workers=cleanup.max_workers, thread_name_prefix="linkstats-cleanup")
        self.max_pending = max(4 * cleanup.max_workers, 200)
        self.slots = threading.BoundedSemaphore(self.max_pending)
        self.answered: deque[tuple[int, Any]] = deque()  # (id, future), appended by the pool's threads
        self.in_flight = 0  # submitted, not yet counted here
        self.submitted = 0
        self.first_failures: list[str] = []
        self.in_a_row = 0
        self.client = cleanup.hook.client

    def submit(self, record_id: int) -> None:
        ceiling = self.outcome.ceiling
        if ceiling is not None and self.submitted >= ceiling:
            self.collect(block=True)
            raise self.cleanup._over_ceiling(self.outcome, self.outcome.matched, before_any=False)
        while not self.slots.acquire(timeout=0.5):  # all slots busy: count what was answered meanwhile
            self.collect(block=False)
        future = self.pool.submit(self._delete, record_id)
        self.in_flight += 1
        self.submitted += 1
        future.add_done_callback(lambda done, record_id=record_id: self._answered(record_id, done))
        self.collect(block=False)

    def _answered(self, record_id: int, future: Any) -> None:
        self.answered.append((record_id, future))
        self.slots.release()

    def _delete(self, record_id: int) -> bool:
        from airflow_provider_linkstats.client.contract import LINKS

        return self.client.delete(LINKS, record_id, missing_ok=True)

    def collect(self, *, block: bool) -> None:
        """Count the answers so far; with ``block``, first wait for every delete in flight."""
        while True:
            while self.answered:
                record_id, future = self.answered.popleft()
                self.in_flight -= 1
                self._count(record_id, future)
            if not block or not self.in_flight:
                return
            time.sleep(0.005)

    def _count(self, record_id: int, future: Any) -> None:
        try:
            gone_now = future.result()
        except LinkstatsError as error:
            self.outcome.failed += 1
            self.in_a_row += 1
            if len(self.first_failures) < 5:
                self.first_failures.append(f"id {record_id}: {error}")
            if self.in_a_row >= StreamingCleanup.FAILURES_IN_A_ROW:
                raise LinkstatsError(
                    f"{self.in_a_row} deletes failed in a row, the cleanup stopped "
                    f"({self.outcome.deleted:,} deleted); first failures: {'; '.join(self.first_failures)}"
                ) from error
            return
        self.in_a_row = 0
        if gone_now:
            self.outcome.deleted += 1
        else:
            self.outcome.already_gone += 1
        self.cleanup._sample(self.outcome, record_id)

    def close(self) -> None:
        try:
            self.collect(block=True)
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _lists_date_expiry(hook: Any) -> bool:
    """Whether the connected generation's ``status=2`` filter lists links ended by date (44-45)."""
    generation = getattr(hook, "generation", None) or hook.dialect
    return bool(getattr(generation, "lists_date_expiry", False))
