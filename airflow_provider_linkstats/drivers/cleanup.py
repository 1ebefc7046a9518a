"""The streaming cleanup's driver: the listing reader, the deleter pool, the walk that joins them.

What the cleanup decides (which links match, by which clock, when a page is read again, when the
listing cannot be trusted) is ``client.cleanup``'s plan, without I/O; this module reads the pages
it asks for, sends the deletes it confirms on a bounded thread pool and tells the progress (``drivers.progress``).

Outside ``operators/`` (whose modules import only ``operators.base``): the cleanup operator and
the bulk delete both use it, and it is imported only when a task runs.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.cleanup import (
    DEFAULT_EVIDENCE_MAX_AGE,
    DEFAULT_MARGIN_WITHOUT_DATE,
    NAMED_MAX,
    ROUNDS_MAX,
    CleanupRules,
    CleanupWalk,
    PagePlan,
    name,
)
from airflow_provider_linkstats.client.errors import LinkstatsError
from airflow_provider_linkstats.drivers.progress import Progress, duration

__all__ = ["CeilingError", "CleanupOutcome", "CleanupRules", "StreamingCleanup"]


# -- reading the listing ---------------------------------------------------------------------------


@dataclass
class ListingPage:
    items: list[dict[str, Any]]
    last_page: int | None  # from the answer's meta; None when the service did not say
    total: int | None
    per_page: int | None = None  # the page size the meta told
    url: str = ""
    # Whether the answer was made after the request was sent (``ServiceClock.is_fresh``): False for a
    # cache's copy (an ``Age``, a ``Date`` older than the send), None without a ``Date`` (nothing tells).
    fresh: bool | None = None


class ListingReader:
    """Reads one page of a links listing at a time, with the page count and total the answer tells."""

    def __init__(self, client: Any, filters: dict[str, Any]) -> None:
        self.client = client
        self.filters = filters
        self.pages_read = 0
        self.busted = 0  # confirming reads sent with a cache-busting parameter
        self.received_at: dict[int, float] = {}  # page number: when its last read was answered (monotonic)

    def read(self, number: int, *, uncached: bool = False) -> ListingPage:
        """Page ``number``; ``uncached`` (a confirming read): asks every cache on the way for the
        service's own answer (``Cache-Control: no-cache``, and a query parameter no cached copy has,
        ``_``, which the service ignores like any parameter it does not read), and says whether the
        answer is fresh."""
        import json
        from dataclasses import replace

        from airflow_provider_linkstats.client.contract import LINKS
        from airflow_provider_linkstats.client.protocol import build_list, parse_page

        request = build_list(LINKS, self.filters, number)
        if uncached:
            self.busted += 1
            buster = (("_", f"{time.time():.3f}-{self.busted}"),)
            request = replace(request, params=request.params + buster, headers=UNCACHED)
        sent = self.client.clock.stamp()
        response = self.client.call(request)
        self.received_at[number] = time.monotonic()
        self.pages_read += 1
        page = parse_page(request, response, self.filters.get("per_page", 10))
        try:
            meta = json.loads(response.body).get("meta")
        except (ValueError, AttributeError):
            meta = None
        told = meta.get("per_page") if isinstance(meta, dict) else None
        per_page = told if isinstance(told, int) and not isinstance(told, bool) and told > 0 else None
        url = getattr(response, "url", "") or request.describe()
        fresh = self.client.clock.is_fresh(response.headers, sent)
        return ListingPage(page.items, page.last_page, page.total, per_page, _listing_url(url), fresh)


# A confirming read asks for the service's own answer, never a cache's copy (RFC 9111 no-cache;
# Pragma for HTTP/1.0 caches).
UNCACHED = (("Cache-Control", "no-cache"), ("Pragma", "no-cache"))
# A confirming read answered from a cache is sent again this many times before its page's matches
# are left (never deleted on a cache's copy).
STALE_REREADS = 2
# A confirming read leaves at least this long after the page's last read was answered: a Date is whole
# seconds, so only then does a cache's copy of that read (the same Date) show as older than its send.
DATE_SECOND = 1.1


def _listing_url(url: str) -> str:
    """The listing's URL without its page number (the walk reads many)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("page", "_")]
    return urlunsplit(parts._replace(query=urlencode(query)))


# -- the streaming cleanup: walk the listing, confirm each page, delete as it goes -------------------


class CeilingError(LinkstatsError):
    """More links match than the cleanup may delete (``max_deletes``, ``max_share``)."""


@dataclass
class CleanupOutcome:
    """Counts and a bounded sample: what the task returns (its XCom), whatever the number of links."""

    dry_run: bool
    rules: str
    matched: int = 0  # records confirmed matching (deleted, already gone, failed, or would go)
    deleted: int = 0
    already_gone: int = 0
    failed: int = 0
    kept: int = 0  # listed but not matching the rules: left alone
    listed_not_matching: int = 0  # of ``kept``: in a listing filtered for the rules, so the server's filter was wrong
    changed: int = 0  # of ``kept``: matched when found, no longer at the confirming read
    unconfirmed: int = 0  # matched when found, not on the confirming page (or evidence too old): left
    pages: int = 0  # listing requests: the walk's reads and the confirming reads
    confirming_reads: int = 0
    stale_reads: int = 0  # confirming reads a cache answered (an Age, an old Date): read again, never acted on
    total_links: int | None = None
    ceiling: int | None = None
    over_ceiling: bool = False
    clock: str = ""  # whose "now" decided (``ServiceClock.describe()``)
    evidence_max_age: float = DEFAULT_EVIDENCE_MAX_AGE
    evidence_age_max: float = 0.0  # seconds: the longest from a confirming read to a delete it allowed
    sample_ids: list[int] = field(default_factory=list)
    first_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_xcom(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


class StreamingCleanup:
    """Walks a links listing and deletes the records ``rules`` match, page by page, as it goes.

    ``client.cleanup.CleanupWalk`` says which page to read and what its records mean. For each
    page with matches the driver reads the page again (the confirming read) and sends the deletes
    it confirms; the next page's walk read overlaps them. A delete the rate limiter held past
    ``evidence_max_age`` is not sent: its page is read again before the rest.

    Memory holds a page or two, the deletes in flight and the counts: nothing grows with the
    number of links. A run killed half-way can simply run again: the links it deleted are no longer
    listed, so no answered delete is sent twice.
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
        evidence_max_age: float = DEFAULT_EVIDENCE_MAX_AGE,
        margin_without_date: float = DEFAULT_MARGIN_WITHOUT_DATE,
        log: logging.Logger,
    ) -> None:
        self.hook = hook
        self.rules = rules
        self.dry_run = dry_run
        self.max_deletes = max_deletes
        self.max_share = max_share
        self.max_workers = max_workers
        self.sample_size = min(sample_size, self.SAMPLE_MAX)
        self.evidence_max_age = evidence_max_age
        self._reporter: Reporter | None = None  # the running cleanup's progress lines
        self.log = log
        self.client = hook.client
        self.clock = self.client.clock
        self.margin_without_date = margin_without_date
        self._said_no_date = False
        self._named: dict[str, int] = {}

    def now(self) -> Any:
        """The moment decisions are made at: the service's clock less its margin, read each time.
        A service whose answers carry no ``Date`` has no known clock: the worker's stands in, less
        ``margin_without_date`` (said once), so every link within that margin of its end is kept."""
        if self.clock.known:
            return self.clock.settled_now()
        if not self._said_no_date:
            self._said_no_date = True
            self.log.warning(
                "The service's answers carry no Date header, so its clock is unknown: this cleanup decides by "
                "this worker's clock less margin_without_date (%.0f s): a link is over only if it ended more than "
                "that before the worker's now; links closer to their end are kept",
                self.margin_without_date,
            )
        return self.clock.settled_now() - dt.timedelta(seconds=self.margin_without_date)

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> CleanupOutcome:
        started = time.monotonic()
        filtered = self.rules.expired and _lists_date_expiry(self.hook)
        filters = self.rules.listing_filters(filtered)
        # The rules the listing was asked to apply: a record listed that fails one shows a wrong filter.
        server_rules = {"expired"} if filtered else set()
        server_rules.update(k for k in ("search", "space_id", "domain_id") if k in filters)
        self._server_rules = frozenset(server_rules)
        reader = ListingReader(self.client, filters)
        outcome = CleanupOutcome(dry_run=self.dry_run, rules=self.rules.describe())
        outcome.evidence_max_age = self.evidence_max_age
        reporter = self._reporter = Reporter(self, outcome, reader)
        limiter = getattr(self.client, "limiter", None)
        told = getattr(limiter, "on_wait", None)
        if limiter is not None:
            limiter.on_wait = reporter.on_wait
        reporter.start()
        try:
            self._run(reader, filters, outcome, reporter)
        finally:
            reporter.stop()
            if limiter is not None:
                limiter.on_wait = told
        outcome.pages = reader.pages_read
        outcome.seconds = round(time.monotonic() - started, 3)
        self.log.info(
            "cleanup %s in %.1f s: %s matched, %s deleted, %s already gone, %s failed, %s kept%s%s; "
            "%s listing request(s) (%s confirming); the longest from a confirming read to its delete: %.1f s",
            "dry run finished" if self.dry_run else "finished",
            outcome.seconds,
            f"{outcome.matched:,}",
            f"{outcome.deleted:,}",
            f"{outcome.already_gone:,}",
            f"{outcome.failed:,}",
            f"{outcome.kept:,}",
            f" ({outcome.changed:,} of them changed after they were listed)" if outcome.changed else "",
            f", {outcome.unconfirmed:,} not confirmed (left)" if outcome.unconfirmed else "",
            f"{outcome.pages:,}",
            f"{outcome.confirming_reads:,}",
            outcome.evidence_age_max,
        )
        for kind, count in self._named.items():
            if count > NAMED_MAX:
                self.log.info("... and %s more link(s) %s", f"{count - NAMED_MAX:,}", kind)
        if outcome.listed_not_matching:
            self.log.warning(
                "the service listed %s link(s) under the cleanup's filters that their own records do not match "
                "(%s); they were kept. Its listing filter is not to be trusted on this install.",
                f"{outcome.listed_not_matching:,}",
                outcome.rules,
            )
        return outcome

    def _run(self, reader: ListingReader, filters: dict[str, Any], outcome: CleanupOutcome, reporter: Reporter) -> None:
        first = reader.read(1)
        if not self.clock.known:  # the first page told no time (no Date, or a cache's copy): one read
            try:
                self.client.ensure_clock()
            except LinkstatsError as error:
                self.log.info("Reading the service's clock failed (%s)", error)
        outcome.clock = self.clock.describe()
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
        self.log.info(
            "'now' is %s, less a margin of %.1f s: a link is over only if it ended before that; each delete "
            "follows a confirming read of its page at most %g s before it",
            outcome.clock,
            self.clock.margin,
            self.evidence_max_age,
        )
        ceiling = outcome.ceiling
        if ceiling is not None and not self.dry_run and (first.total is None or first.total > ceiling):
            # More are listed than may go: count the matches first, so that an over-ceiling run
            # stops before its first delete rather than part-way.
            counted = CleanupOutcome(dry_run=True, rules=outcome.rules)
            reporter.outcome = counted
            self._walk(reader, first, counted, delete=False)
            reporter.outcome = outcome
            if counted.matched > ceiling:
                outcome.matched, outcome.pages = counted.matched, reader.pages_read
                raise self._over_ceiling(outcome, counted.matched, before_any=True)
            self.log.info("%s links match, within the ceiling of %s: deleting", f"{counted.matched:,}", f"{ceiling:,}")
        self._walk(reader, first, outcome, delete=not self.dry_run)
        if self.dry_run and ceiling is not None and outcome.matched > ceiling:
            outcome.over_ceiling = True

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
        """The account's links: one small listing request (its meta's total), or a walk if it has none
        (``client.iter``: bounded, it stops with an error when the paging cannot be trusted)."""
        from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, PER_PAGE_CHOICES

        page = ListingReader(self.client, {"per_page": min(PER_PAGE_CHOICES)}).read(1)
        if page.total is not None:
            return page.total
        return sum(1 for _ in self.client.iter(LINKS, {"per_page": MAX_PER_PAGE}))

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
        walk = CleanupWalk(
            self.rules,
            first.items,
            per_page=reader.filters["per_page"],
            url=first.url,
            last_page=first.last_page,
            total=first.total,
            meta_per_page=first.per_page,
            server_rules=self._server_rules,
            max_age=self.evidence_max_age,
        )
        if walk.distrusted:
            self.log.warning(
                "the listing %s says %s page(s) but %s row(s) at %d a page: its page count is not trusted, the walk "
                "goes forward page by page instead (at most %s pages)",
                first.url,
                first.last_page,
                "?" if first.total is None else f"{first.total:,}",
                walk.size,
                f"{walk.guard.bound:,}",
            )
        self._current = walk
        deleter = _Deleter(self, outcome) if delete else None
        first_unread = True
        read_before = False  # a page other than the first read was read by this walk
        previous: _PageRun | None = None  # the page whose deletes are in flight (backward walk)
        try:
            while (number := walk.next_number()) is not None:
                # The walk's read of page 1 is the run's first request. A backward walk reads page 1 last: a
                # delete since may have moved links onto it, so it is read again (its confirming read, which
                # finds them; a dry run has none: it reads page 1 afresh).
                stale_first = False
                if number == 1 and first_unread and not (read_before and deleter is None):
                    items, total, first_unread, stale_first = first.items, first.total, False, read_before
                else:
                    read_before = True
                    page = reader.read(number)
                    items, total = page.items, page.total
                plan = walk.page(number, items, self.now(), total=total)
                if previous is not None and deleter is not None:
                    self._finish(previous, walk, reader, deleter, outcome)
                    previous = None
                outcome.kept += plan.kept
                outcome.listed_not_matching += plan.listed_not_matching
                if deleter is None:
                    for record_id in sorted(plan.candidates):
                        outcome.matched += 1
                        self._sample(outcome, record_id)
                    walk.done(plan, removed=0)
                    continue
                run = _PageRun(plan, removed_before=outcome.deleted + outcome.already_gone)
                if plan.pending or stale_first:
                    self._confirm(run, walk, reader, deleter, outcome)
                walk.settle(plan)  # before the next page is read: it leaves out what this one handled
                if walk.backward:
                    previous = run  # its deletes go on while the next page is read
                else:
                    self._finish(run, walk, reader, deleter, outcome)  # the next page's offset depends on them
            if previous is not None and deleter is not None:
                self._finish(previous, walk, reader, deleter, outcome)
        finally:
            if deleter is not None:
                deleter.close()
        if deleter is not None and outcome.failed:
            outcome.first_failures = deleter.first_failures

    def _confirm(
        self, run: _PageRun, walk: CleanupWalk, reader: ListingReader, deleter: _Deleter, outcome: CleanupOutcome
    ) -> None:
        """One confirming read of the page and the deletes it allows."""
        plan = run.plan
        for attempt in range(1 + STALE_REREADS):
            pause = reader.received_at.get(plan.number, 0.0) + DATE_SECOND - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            sent_at = time.monotonic()
            page = reader.read(plan.number, uncached=True)
            outcome.confirming_reads += 1
            if page.fresh is not False:
                break
            outcome.stale_reads += 1
            self._name(
                "stale: confirming reads a cache answered",
                f"the confirming read of page {plan.number} came from a cache (an Age header, or a Date older than "
                f"its request){'; reading it again' if attempt < STALE_REREADS else ''}",
            )
        items = page.items if page.fresh is not False else []  # a cache's copy confirms nothing: left, not deleted
        verdict = plan.confirm(walk.confirming(plan, items), self.now(), sent_at)
        for record, rule in verdict.changed:
            outcome.kept += 1
            outcome.changed += 1
            self._name(
                "kept: changed after they were listed",
                f"kept {name(record)}: it matched when listed, but no longer at its confirming read "
                f"({_rule_text(rule)})",
            )
        for record_id in verdict.left:
            outcome.unconfirmed += 1
            self._name(
                "left: not on their page at the confirming read",
                f"left link {record_id}: it matched when listed but was no longer on page {plan.number} at the "
                "confirming read (deleted meanwhile, or moved): not deleted on that evidence",
            )
        for record_id in verdict.moved:
            self.log.debug("link %s moved to an earlier page: it is read again there", record_id)
        run.batch = batch = _Batch(plan, verdict.fresh_until)
        for record_id in verdict.delete:
            if record_id not in run.counted:  # a delete sent again after a re-read is one match
                run.counted.add(record_id)
                outcome.matched += 1
            deleter.submit(record_id, batch)

    def _finish(
        self, run: _PageRun, walk: CleanupWalk, reader: ListingReader, deleter: _Deleter, outcome: CleanupOutcome
    ) -> None:
        """Wait for the page's deletes; those held past their evidence's freshness go back to the page,
        which is read again (as long as a round gets some through)."""
        plan = run.plan
        while True:
            deleter.collect(block=True)
            batch, run.batch = run.batch, None
            stale = batch.stale_records if batch is not None else []
            if stale:
                plan.requeue(stale)
            if not plan.pending:
                break
            if batch is not None and batch.sent == 0 and stale:
                self._leave_stale(plan, outcome)
                break
            if plan.rounds >= ROUNDS_MAX:
                self._leave_stale(plan, outcome)
                break
            self._confirm(run, walk, reader, deleter, outcome)
        walk.done(plan, removed=outcome.deleted + outcome.already_gone - run.removed_before + plan.left)

    def _leave_stale(self, plan: PagePlan, outcome: CleanupOutcome) -> None:
        count = len(plan.candidates)
        outcome.unconfirmed += count
        self.log.warning(
            "left %d link(s) of page %d: their deletes waited longer than evidence_max_age (%g s) after the page's "
            "confirming read, even right after one (the rate limit holds them): raise evidence_max_age or lower "
            "max_workers",
            count,
            plan.number,
            self.evidence_max_age,
        )
        plan.candidates.clear()

    def _name(self, kind: str, text: str) -> None:
        """Name the first few links of each kind in the log; the run's last line counts the rest."""
        count = self._named.get(kind, 0) + 1
        self._named[kind] = count
        if count <= NAMED_MAX:
            self.log.info("%s", text)

    def _sample(self, outcome: CleanupOutcome, record_id: int) -> None:
        if len(outcome.sample_ids) < self.sample_size:
            outcome.sample_ids.append(record_id)
        if self._reporter is not None:
            self._reporter.tell()  # each unit as it is done: the rate's minute starts where it starts


@dataclass
class _PageRun:
    """The driver's side of one page: the deletes of its last confirming read, what it counted."""

    plan: PagePlan
    removed_before: int  # deleted + already gone before its first delete
    batch: _Batch | None = None
    counted: set[int] = field(default_factory=set)


def _rule_text(rule: str) -> str:
    return {
        "expired": "it is not over any more: its end or click limit moved",
        "older_than_days": "its created_at is not old enough",
        "search": "its text no longer matches search",
        "space_id": "it moved to another space",
        "domain_id": "it moved to another domain",
    }.get(rule, rule)


class Reporter:
    """A progress line every ``LOG_EVERY`` seconds while the cleanup runs, from a thread of its own
    (the walking thread may be held by the rate limiter), and the limiter's waits as they begin."""

    def __init__(self, cleanup: StreamingCleanup, outcome: CleanupOutcome, reader: ListingReader) -> None:
        self.cleanup = cleanup
        self.outcome = outcome
        self.reader = reader
        self.limiter = getattr(cleanup.client, "limiter", None)
        self.progress = Progress(limiter=self.limiter)
        self.waiting_until = 0.0  # the limiter holds a request until then (monotonic)
        self.held = 0.0  # seconds some request was held by the limiter (overlapping waits once)
        self.held_said = 0.0  # of which told in a line already
        self.last_line = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="linkstats-cleanup-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def on_wait(self, seconds: float) -> None:
        """The rate limiter holds a request for ``seconds`` (called from the waiting thread)."""
        now = time.monotonic()
        until = now + seconds
        if until > self.waiting_until:
            self.held += until - max(now, self.waiting_until)
            self.waiting_until = until
        if seconds >= self.cleanup.LOG_EVERY and now - self.last_line >= 1.0:
            self.line()  # a long wait is said when it begins, not 10 s into it

    def _loop(self) -> None:
        while not self._stop.wait(max(0.5, self.cleanup.LOG_EVERY - (time.monotonic() - self.last_line))):
            if time.monotonic() - self.last_line >= self.cleanup.LOG_EVERY - 0.05:
                self.line()

    def line(self) -> None:
        with self._lock:  # the reporter's thread and a waiting one may both tell
            self._line()

    def _done(self) -> int:
        outcome = self.outcome
        return outcome.matched if outcome.dry_run else outcome.deleted + outcome.already_gone + outcome.failed

    def tell(self) -> None:
        """A unit is done: the progress samples every unit, so its last minute is read exactly."""
        self.progress.update(self._done())

    def _line(self) -> None:
        self.last_line = time.monotonic()
        outcome = self.outcome
        dry = outcome.dry_run
        done = self._done()
        self.progress.update(done)
        examined = outcome.matched + outcome.kept + outcome.unconfirmed
        walk = getattr(self.cleanup, "_current", None)
        listed = getattr(walk, "total", None)
        parts = [f"{self.progress.rate:.1f}/s"]
        if listed:
            share = outcome.matched / examined if examined else 1.0
            remaining = max(0, listed - examined) * share + (0 if dry else outcome.matched - done)
            seconds = self.progress.seconds_left(remaining)
            if seconds is not None and remaining > 0:
                parts.append(f"about {duration(seconds)} left")
        wait = self.waiting_until - time.monotonic()
        if wait >= 0.5:
            parts.append(f"waiting {wait:.0f} s for the service's rate limit")
        elif self.held - self.held_said >= 0.5:
            parts.append(f"waited {self.held - self.held_said:.0f} s for the service's rate limit since the last line")
        self.held_said = self.held
        self.cleanup.log.info(
            "%s %s of %s matching links, %s of %s listed examined, %s listing request(s) (%s)",
            "would delete" if dry else "deleted",
            f"{done:,}",
            f"{outcome.matched:,}",
            f"{examined:,}",
            "?" if listed is None else f"{listed:,}",
            f"{self.reader.pages_read:,}",
            ", ".join(parts),
        )


class _Stale(Exception):
    """A delete's evidence is older than ``evidence_max_age`` at the moment it would be sent."""


class _Batch:
    """The deletes one confirming read allowed: sent only until ``fresh_until`` (monotonic)."""

    def __init__(self, plan: PagePlan, fresh_until: float) -> None:
        self.plan = plan
        self.fresh_until = fresh_until
        self.read_at = fresh_until - plan.walk.max_age
        self.expired = False  # once one delete found the evidence too old, the rest are not tried
        self.sent = 0
        self.stale_records: list[dict[str, Any]] = []

    def check(self) -> float:
        """The evidence's age now; raises ``_Stale`` past the freshness window."""
        now = time.monotonic()
        if self.expired or now > self.fresh_until:
            self.expired = True
            raise _Stale()
        return now - self.read_at


class _Deleter:
    """Deletes on a bounded thread pool sharing the hook's client (one session and rate limiter).

    At most ``max_pending`` deletes are in flight (a semaphore, released as each is answered), so
    memory stays bounded; answers queue up as they come and are counted on the walking thread.
    Each delete is checked against its batch's freshness right before it is sent (after any rate
    limit wait, through ``client.api.BEFORE_SEND``): one held too long is not sent.
    """

    def __init__(self, cleanup: StreamingCleanup, outcome: CleanupOutcome) -> None:
        self.cleanup = cleanup
        self.outcome = outcome
        self.pool = ThreadPoolExecutor(max_workers=cleanup.max_workers, thread_name_prefix="linkstats-cleanup")
        self.max_pending = max(4 * cleanup.max_workers, 200)
        self.slots = threading.BoundedSemaphore(self.max_pending)
        self.answered: deque[tuple[int, _Batch, Any]] = deque()  # (id, batch, future), from the pool's threads
        self.in_flight = 0  # submitted, not yet counted here
        self.submitted = 0
        self.first_failures: list[str] = []
        self.in_a_row = 0
        self.client = cleanup.client
        self.lock = threading.Lock()

    def submit(self, record_id: int, batch: _Batch) -> None:
        ceiling = self.outcome.ceiling
        if ceiling is not None and self.submitted >= ceiling:
            self.collect(block=True)
            raise self.cleanup._over_ceiling(self.outcome, self.outcome.matched, before_any=False)
        while not self.slots.acquire(timeout=0.5):  # all slots busy: count what was answered meanwhile
            self.collect(block=False)
        future = self.pool.submit(self._delete, record_id, batch)
        self.in_flight += 1
        self.submitted += 1
        future.add_done_callback(lambda done, record_id=record_id: self._answered(record_id, batch, done))
        self.collect(block=False)

    def _answered(self, record_id: int, batch: _Batch, future: Any) -> None:
        self.answered.append((record_id, batch, future))
        self.slots.release()

    def _delete(self, record_id: int, batch: _Batch) -> bool | None:
        """True: deleted; False: already gone; None: not sent (its evidence grew too old)."""
        from airflow_provider_linkstats.client.api import BEFORE_SEND
        from airflow_provider_linkstats.client.contract import LINKS

        try:
            batch.check()  # before waiting for the limiter: a delete already too late does not queue
        except _Stale:
            return None

        def fresh(request: Any) -> None:
            age = batch.check()
            with self.lock:
                self.outcome.evidence_age_max = max(self.outcome.evidence_age_max, round(age, 1))

        token = BEFORE_SEND.set(fresh)
        try:
            return self.client.delete(LINKS, record_id, missing_ok=True)
        except _Stale:
            return None
        finally:
            BEFORE_SEND.reset(token)

    def collect(self, *, block: bool) -> None:
        """Count the answers so far; with ``block``, first wait for every delete in flight."""
        while True:
            while self.answered:
                record_id, batch, future = self.answered.popleft()
                self.in_flight -= 1
                self._count(record_id, batch, future)
            if not block or not self.in_flight:
                return
            time.sleep(0.002)

    def _count(self, record_id: int, batch: _Batch, future: Any) -> None:
        try:
            gone_now = future.result()
        except LinkstatsError as error:
            batch.sent += 1
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
        if gone_now is None:  # not sent: back to its page for another confirming read
            self.submitted -= 1
            batch.stale_records.append({"id": record_id})
            return
        batch.sent += 1
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
